// Octavia whole (issue 27) with this project's amphora driver (issue 30):
// Octavia 19's real worker loads amphora_spec_driver (octavia-driver/) by
// its entry point and describes each load balancer to the agent as a spec
// through API 2.0; the agent renders it. Every scenario of
// test/helpers/octavia-box/whole.ts, and member churn (the batch update, the
// rolling replacement) reloads haproxy in the amphora not once.
//
//   node dist/test/run.js interop/octavia-whole-spec-driver.test
import { SCENARIOS, wholeSuite } from '../helpers/octavia-box/whole.js';

wholeSuite('sid', 'this', SCENARIOS, 'spec');
