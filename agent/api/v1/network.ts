// API 1.0 network routes: plug vip, plug network, interface lookup.
import express, { type Request, type Response } from 'express';
import { SMALL_BODY_LIMIT } from '../body-limits.js';
import type { Routes } from '../routes.js';
import type { FixedIp, HostRoute, VipSubnet } from '../../net/interface-file.js';
import { explode, ipFamily, parseCidr } from '../../net/ip.js';
import { plugNetwork, plugVip, type PlugSettings } from '../../net/plug.js';
import { amphoraNamespace, interfaceWithAddress } from '../../net/interfaces.js';
import { sendJson, sendMessage } from '../errors.js';
import { applyVipRules, vipRulesRefusal } from '../../net/nftables.js';
import { BadRequestError, InvalidRequestError, sendV1Error } from './errors.js';
import type { Logger } from '../../log.js';

type Json = Record<string, unknown>;

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function hostRoutes(v: unknown): HostRoute[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((r) => isObject(r) && ipFamily(String(r.nexthop)) && typeof r.destination === 'string')) {
    throw new InvalidRequestError('Invalid host routes');
  }
  for (const r of v as Json[]) parseOrBad(String(r.destination), 'Invalid host routes');
  return v as HostRoute[];
}

function parseOrBad(cidr: string, message: string): void {
  try {
    parseCidr(cidr);
  } catch (err) {
    throw new InvalidRequestError(`${message}: ${(err as Error).message}`);
  }
}

function optionalMtu(v: unknown): number | null {
  if (v === undefined || v === null) return null;
  if (!Number.isInteger(v) || (v as number) < 68 || (v as number) > 65535) throw new InvalidRequestError('Invalid MTU');
  return v as number;
}

/** The VIP subnets of a plug/vip body (the primary VIP plus additional_vips). */
function vipSubnets(vip: string, body: Json): VipSubnet[] {
  if (!ipFamily(vip)) throw new InvalidRequestError(`Invalid VIP: '${vip}' does not appear to be an IPv4 or IPv6 address`);
  parseOrBad(String(body.subnet_cidr), 'Invalid VIP');
  const gateway = body.gateway === null ? null : String(body.gateway);
  if (gateway !== null && !ipFamily(gateway)) throw new InvalidRequestError(`Invalid VIP: invalid gateway '${gateway}'`);
  const out: VipSubnet[] = [{ ip_address: vip, subnet_cidr: String(body.subnet_cidr), gateway, host_routes: hostRoutes(body.host_routes) }];
  const extra = body.additional_vips ?? [];
  if (!Array.isArray(extra)) throw new InvalidRequestError('Invalid VIP: additional_vips must be a list');
  for (const a of extra) {
    if (!isObject(a) || !['ip_address', 'subnet_cidr', 'gateway', 'host_routes'].every((k) => k in a) || !ipFamily(String(a.ip_address))) {
      throw new InvalidRequestError('Invalid VIP: each additional VIP needs ip_address, subnet_cidr, gateway and host_routes');
    }
    parseOrBad(String(a.subnet_cidr), 'Invalid VIP');
    out.push({
      ip_address: String(a.ip_address),
      subnet_cidr: String(a.subnet_cidr),
      gateway: a.gateway === null ? null : String(a.gateway),
      host_routes: hostRoutes(a.host_routes),
    });
  }
  return out;
}

function vrrpIpOf(body: Json): string | null {
  if (body.vrrp_ip === undefined || body.vrrp_ip === null) return null;
  if (!ipFamily(String(body.vrrp_ip)))
    throw new InvalidRequestError(`Invalid VRRP Address: '${String(body.vrrp_ip)}' does not appear to be an IPv4 or IPv6 address`);
  return String(body.vrrp_ip);
}

function fixedIps(v: unknown): FixedIp[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new InvalidRequestError('Invalid network port');
  return v.map((f) => {
    if (!isObject(f) || !ipFamily(String(f.ip_address))) throw new InvalidRequestError('Invalid network port');
    parseOrBad(String(f.subnet_cidr), 'Invalid network port');
    // A gateway becomes a default route when the port carries a VIP (vip_net_info).
    const gateway = f.gateway === undefined || f.gateway === null ? null : String(f.gateway);
    if (gateway !== null && !ipFamily(gateway)) throw new InvalidRequestError(`Invalid network port: invalid gateway '${gateway}'`);
    return { ip_address: String(f.ip_address), subnet_cidr: String(f.subnet_cidr), gateway, host_routes: hostRoutes(f.host_routes) };
  });
}

export function registerNetworkRoutes(routes: Routes, settings: () => PlugSettings, log: Logger): void {
  const json = express.json({ type: () => true, limit: SMALL_BODY_LIMIT, strict: false });

  routes.post('/plug/vip/:vip', json, async (req: Request, res: Response) => {
    const body = req.body as unknown;
    try {
      if (!isObject(body) || !('subnet_cidr' in body) || !('gateway' in body) || !('mac_address' in body)) {
        throw new BadRequestError('Invalid subnet information');
      }
      const mac = String(body.mac_address);
      if (!MAC.test(mac)) throw new BadRequestError('Invalid subnet information');
      const vips = vipSubnets(String(req.params.vip), body);
      const ifname = await plugVip(
        settings(),
        {
          vips,
          mac,
          vrrpIp: vrrpIpOf(body),
          mtu: optionalMtu(body.mtu),
          isSriov: (body.is_sriov as boolean | undefined) ?? null,
        },
        log,
      );
      sendJson(res, 202, { message: 'OK', details: `VIPs plugged on interface ${ifname}: ${vips.map((v) => explode(v.ip_address)).join(', ')}` });
    } catch (err) {
      sendV1Error(res, err, 'Error plugging VIP');
    }
  });

  routes.post('/plug/network', json, async (req: Request, res: Response) => {
    const body = req.body as unknown;
    try {
      if (!isObject(body) || !('mac_address' in body) || !MAC.test(String(body.mac_address))) {
        throw new BadRequestError('Invalid port information');
      }
      let vip: { vips: VipSubnet[]; vrrpIp: string | null } | null = null;
      if (isObject(body.vip_net_info)) {
        const info = body.vip_net_info;
        vip = { vips: vipSubnets(String(info.vip), info), vrrpIp: vrrpIpOf(info) };
      }
      const out = await plugNetwork(
        settings(),
        {
          mac: String(body.mac_address),
          fixedIps: fixedIps(body.fixed_ips),
          mtu: optionalMtu(body.mtu),
          isSriov: (body.is_sriov as boolean | undefined) ?? null,
          vip,
        },
        log,
      );
      sendJson(res, 202, { message: 'OK', details: out.updated ? `Updated existing interface ${out.ifname}` : `Plugged on interface ${out.ifname}` });
    } catch (err) {
      sendV1Error(res, err, 'Error plugging network');
    }
  });

  routes.put('/interface/:ip/rules', json, async (req: Request, res: Response) => {
    const address = String(req.params.ip);
    if (!ipFamily(address)) return sendMessage(res, 400, 'Invalid IP address');
    const { netns, basePath } = settings();
    if (!(await interfaceWithAddress(netns, address))) return sendMessage(res, 404, 'Error interface not found for IP address');
    try {
      // Bad input is a 400 before the rules file is touched, never an nft failure (500) that leaves the file for the next bring-up.
      const refusal = vipRulesRefusal(req.body);
      if (refusal !== null) throw new BadRequestError(`Invalid rules information: ${refusal}`);
      await applyVipRules(basePath, amphoraNamespace({ netns }), req.body);
      sendMessage(res, 200, 'OK');
    } catch (err) {
      sendV1Error(res, err, 'Error loading the VIP firewall rules');
    }
  });

  routes.get('/interface/:ip', async (req: Request, res: Response) => {
    const address = String(req.params.ip);
    if (!ipFamily(address)) return sendMessage(res, 400, 'Invalid IP address');
    const ifname = await interfaceWithAddress(settings().netns, address);
    if (!ifname) return sendMessage(res, 404, 'Error interface not found for IP address');
    sendJson(res, 200, { message: 'OK', interface: ifname });
  });
}
