// Octavia whole (issue 27) on Octavia 19: every scenario of
// test/helpers/octavia-box/whole.ts, through the v2 API only, onto amphorae
// (the CI image under systemd) running this checkout's agent. About 5
// minutes; the first run on a machine also builds the CI image.
//
//   node dist/test/run.js interop/octavia-whole.test
//
// AMPHORA_OCTAVIA_BOX_SUITE=trixie runs them on Octavia 16;
// AMPHORA_OCTAVIA_BOX_AGENT=reference on Debian's octavia-agent instead
// (bench/octavia-box.ts puts the two side by side).
import type { Suite } from '../helpers/octavia-box/control-plane.js';
import type { AgentKind } from '../helpers/octavia-box/octavia-box.js';
import { wholeSuite } from '../helpers/octavia-box/whole.js';

wholeSuite((process.env.AMPHORA_OCTAVIA_BOX_SUITE ?? 'sid') as Suite, (process.env.AMPHORA_OCTAVIA_BOX_AGENT ?? 'this') as AgentKind);
