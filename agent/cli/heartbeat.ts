// `amphora-agent heartbeat --print [--config-file PATH]`: the next heartbeat
// message, decoded, for operators. It neither sends it nor advances the
// sequence number or the delta counters.
import { rootLogger } from '../log.js';
import { ConfigStore } from '../config/store.js';
import { HeartbeatSender } from '../health/sender.js';
import { encodeHeartbeat } from '../health/envelope.js';
import { buildEngine } from '../haproxy/from-config.js';

export async function heartbeat(args: string[]): Promise<void> {
  if (!args.includes('--print')) throw new Error('usage: amphora-agent heartbeat --print [--config-file PATH]');
  const i = args.indexOf('--config-file');
  const store = await ConfigStore.load(i >= 0 ? args[i + 1]! : '/etc/octavia/amphora-agent.conf');
  const engine = await buildEngine(store.current, rootLogger);
  const sender = new HeartbeatSender({ config: store, log: rootLogger, loadBalancerIds: () => engine.loadBalancerIds(), stats: (lbId) => engine.stats(lbId) });
  const message = await sender.buildNext(false);
  const bytes = (await encodeHeartbeat(message, store.current.healthManager.heartbeatKey)).length;
  const skip = await sender.skipReason();
  process.stdout.write(`${JSON.stringify(message, null, 2)}\n`);
  process.stderr.write(`datagram: ${bytes} bytes${skip ? `; not sent now: ${skip}` : ''}\n`);
}
