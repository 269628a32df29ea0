import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hasPeers, sectionsLearning } from '../../agent/haproxy/process/peers-resync.js';

// `show peers` as haproxy 2.6 and 3.2 print it (trimmed), taken from this machine's binaries.
const LEARNING_26 = `0x56191f80ae90: [04/Dec/2026:06:45:31] id=p1 disabled=0 flags=0x0 resync_timeout=3s task_calls=1
  0x56191f80e060: id=ampB(remote,active) addr=10.9.0.2:1025 last_status=CONN last_hdshk=1s
        flags=0x0 appctx:0x7f600402fd90 st0=6 st1=0 task_calls=2 state=TAR
`;
const DONE_26 = `0x55954c55ded0: [04/Dec/2026:06:47:52] id=p1 disabled=0 flags=0x1103 resync_timeout=3s task_calls=3
        flags=0x0
`;
const LOCAL_ONLY_32 = `0x7f9ae0660000: [04/Dec/2026:06:46:02] id=a5a5_peers disabled=0 flags=0x100001 resync_timeout=4s task_calls=2
  0x7f9ae06695c0: id=ampB(remote,active) addr=10.9.0.2:1025 app_state=STOPPED learn_state=NOTASSIGNED last_status=CONN last_hdshk=2s
`;

test('a section learns until both its local and remote lessons are over', () => {
  assert.equal(sectionsLearning(LEARNING_26), ['p1']);
  assert.equal(sectionsLearning(LOCAL_ONLY_32), ['a5a5_peers']);
  assert.equal(sectionsLearning(DONE_26), []);
});

test('peer lines, disabled sections and no peers at all count as done', () => {
  assert.equal(sectionsLearning(''), []);
  assert.equal(sectionsLearning(LEARNING_26.replace('disabled=0', 'disabled=1')), []);
});

test('only a peers section makes a config wait', () => {
  assert.ok(hasPeers('global\n    daemon\n\npeers lb_peers\n    peer a 10.0.0.1:1025\n'));
  assert.not.ok(hasPeers('global\n    daemon\n# peers lb_peers\nbackend b\n    stick-table type ip size 10k peers x\n'));
});

test.run();
