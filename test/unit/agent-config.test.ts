// amphora-agent.conf as Octavia's controllers write it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAgentConfig } from '../../agent/config/agent-config.js';

test('log facilities: [amphora_agent] first, else [haproxy_amphora], where the controller template puts them', () => {
  const fromTemplate = parseAgentConfig('[haproxy_amphora]\nuser_log_facility = 3\nadministrative_log_facility = 5\n');
  assert.is(fromTemplate.amphoraAgent.userLogFacility, 3);
  assert.is(fromTemplate.amphoraAgent.administrativeLogFacility, 5);
  assert.is(fromTemplate.render.userLogFacility, 3);
  assert.is(fromTemplate.render.administrativeLogFacility, 5);
  const both = parseAgentConfig('[haproxy_amphora]\nuser_log_facility = 3\n[amphora_agent]\nuser_log_facility = 6\n');
  assert.is(both.amphoraAgent.userLogFacility, 6);
  const none = parseAgentConfig('');
  assert.is(none.amphoraAgent.userLogFacility, 0);
  assert.is(none.amphoraAgent.administrativeLogFacility, 1);
});

test('controllers 11 to 14 still write respawn_count, respawn_interval and use_upstart: accepted', () => {
  const c = parseAgentConfig('[haproxy_amphora]\nrespawn_count = 2\nrespawn_interval = 2\nuse_upstart = False\n');
  assert.is(c.haproxyAmphora.basePath, '/var/lib/octavia');
});

test("network_namespace: Octavia's amphora-haproxy by default, null for '' (the agent's own), the same for the renderer", () => {
  const def = parseAgentConfig('');
  assert.is(def.amphoraAgent.networkNamespace, 'amphora-haproxy');
  assert.is(def.render.networkNamespace, 'amphora-haproxy');
  const own = parseAgentConfig('[amphora_agent]\nnetwork_namespace =\n');
  assert.is(own.amphoraAgent.networkNamespace, null);
  assert.is(own.render.networkNamespace, null);
  const named = parseAgentConfig('[amphora_agent]\nnetwork_namespace = tenant-1\n[haproxy_amphora]\nbase_cert_dir = /c\n');
  assert.is(named.amphoraAgent.networkNamespace, 'tenant-1');
  assert.is(named.render.networkNamespace, 'tenant-1');
  assert.is(named.haproxyAmphora.baseCertDir, '/c');
  assert.is(named.render.baseCertDir, '/c');
});

test.run();
