// Each path is registered once with its 405 answer; where paths overlap, a
// request goes to the path that takes its method, wherever it is registered
// (as Flask routes), and 405 only when none does.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Routes } from '../../agent/api/routes.js';

async function answers(requests: [string, string][]): Promise<string[]> {
  const r = express.Router({ strict: true });
  const routes = new Routes(r, (_req, res) => void res.status(405).send('405'));
  const said = (what: string) => (_req: express.Request, res: express.Response) => void res.send(what);
  routes.get('/loadbalancer/:lbId/haproxy', said('get config'));
  routes.put('/loadbalancer/:objectId/:action', said('action'));
  routes.put('/vrrp/upload', said('upload')).put('/vrrp/:action', said('vrrp action'));
  routes.put('/certs/:name', said('put cert')).get('/certs/:name', said('get cert'));
  const app = express();
  app.set('strict routing', true);
  app.use('/1.0', r);
  app.use((_req, res) => void res.status(404).send('404'));
  const server = http.createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    const out: string[] = [];
    for (const [method, path] of requests) {
      const res = await fetch(`http://127.0.0.1:${port}/1.0${path}`, { method });
      out.push(`${res.status} ${method === 'HEAD' ? '' : await res.text()}`.trim());
    }
    return out;
  } finally {
    server.close();
  }
}

test('overlapping paths: the one with the method answers, 405 when none has it, 404 for unknown paths', async () => {
  assert.equal(
    await answers([
      ['GET', '/loadbalancer/lb/haproxy'],
      ['PUT', '/loadbalancer/lb/haproxy'],
      ['DELETE', '/loadbalancer/lb/haproxy'],
      ['GET', '/loadbalancer/lb/start'],
      ['PUT', '/loadbalancer/lb/start'],
      ['HEAD', '/loadbalancer/lb/haproxy'],
      ['PUT', '/vrrp/upload'],
      ['PUT', '/vrrp/start'],
      ['GET', '/vrrp/upload'],
      ['PUT', '/certs/a.pem'],
      ['GET', '/certs/a.pem'],
      ['POST', '/certs/a.pem'],
      ['OPTIONS', '/certs/a.pem'],
      ['GET', '/LOADBALANCER/lb/haproxy'],
      ['GET', '/loadbalancer/lb/haproxy/'],
      ['GET', '/nope'],
    ]),
    [
      '200 get config',
      '200 action',
      '405 405',
      '405 405',
      '200 action',
      '200',
      '200 upload',
      '200 vrrp action',
      '405 405',
      '200 put cert',
      '200 get cert',
      '405 405',
      '405 405',
      '200 get config',
      '404 404',
      '404 404',
    ],
  );
});

test.run();
