// The built-in development configuration: what a first start writes, and how
// a config written by the previous version (haproxy in an empty namespace,
// Octavia's connection limit) is brought up to date, and only that.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDevSetup } from '../../agent/config/dev-default.js';
import { parseAgentConfig } from '../../agent/config/agent-config.js';

const HEADER = '# Development configuration written by `amphora-agent serve` on first start.';

async function inScratch(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'aat-dev-'));
  try {
    await fn(join(dir, '.amphora-dev'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a first start writes a config with haproxy beside the agent and a workstation-sized connection limit', () =>
  inScratch(async (dir) => {
    const before = process.env.AMPHORA_AGENT_DEV_PORT;
    process.env.AMPHORA_AGENT_DEV_PORT = '19555';
    try {
      const setup = await ensureDevSetup(dir);
      const text = readFileSync(setup.configFile, 'utf8');
      assert.ok(text.startsWith(`${HEADER}\n`));
      const config = parseAgentConfig(text);
      assert.is(config.amphoraAgent.networkNamespace, null, "the agent's own namespace");
      assert.is(config.haproxyAmphora.bindPort, 19555);
      assert.is(config.render.defaultConnectionLimit, 5000);
      assert.is(statSync(setup.configFile).mode & 0o777, 0o644);
      assert.is(statSync(setup.clientKey).mode & 0o777, 0o600);
    } finally {
      if (before === undefined) delete process.env.AMPHORA_AGENT_DEV_PORT;
      else process.env.AMPHORA_AGENT_DEV_PORT = before;
    }
  }));

const OLD = [
  HEADER,
  '[haproxy_amphora]',
  'bind_port = 9443',
  'tune_from_amphora_details = false',
  '',
  '[amphora_agent]',
  'network_namespace = amphora-haproxy',
  '',
].join('\n');

test('a config of the previous version gets the namespace emptied and the limit added, once', () =>
  inScratch(async (dir) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'amphora-agent.conf'), OLD);
    const setup = await ensureDevSetup(dir);
    const migrated = readFileSync(setup.configFile, 'utf8');
    assert.is(
      migrated,
      OLD.replace('network_namespace = amphora-haproxy', 'network_namespace =').replace(
        'tune_from_amphora_details = false',
        'tune_from_amphora_details = false\ndefault_connection_limit = 5000',
      ),
    );
    await ensureDevSetup(dir);
    assert.is(readFileSync(setup.configFile, 'utf8'), migrated);
  }));

test('a config the developer wrote (no header) or set a limit in is left as it is', () =>
  inScratch(async (dir) => {
    mkdirSync(dir, { recursive: true });
    for (const text of [OLD.replace(`${HEADER}\n`, ''), OLD.replace('bind_port = 9443', 'default_connection_limit = 100\nbind_port = 9443')]) {
      writeFileSync(join(dir, 'amphora-agent.conf'), text);
      await ensureDevSetup(dir);
      const now = readFileSync(join(dir, 'amphora-agent.conf'), 'utf8');
      if (text.startsWith(HEADER)) assert.is(now, text.replace('network_namespace = amphora-haproxy', 'network_namespace ='));
      else assert.is(now, text);
    }
  }));

test.run();
