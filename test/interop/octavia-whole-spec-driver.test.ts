// Octavia whole (issue 27) with this project's amphora driver (issue 30):
// Octavia 19's real worker loads amphora_spec_driver (octavia-driver/) by
// its entry point and describes each load balancer to the agent as a spec
// through API 2.0; the agent renders it. The scenarios where the driver
// differs from Octavia's (the create, member updates, the certificate
// rotation's update) in the gate, every scenario of
// test/helpers/octavia-box/whole.ts in the matrix (`npm run test:matrix`);
// member churn (the batch update, the rolling replacement) reloads haproxy
// in the amphora not once.
//
//   node dist/test/run.js interop/octavia-whole-spec-driver.test
import { gateOrMatrix } from '../helpers/haproxies.js';
import { SCENARIOS, wholeSuite } from '../helpers/octavia-box/whole.js';

wholeSuite('sid', 'this', gateOrMatrix(SCENARIOS, ['create', 'batch', 'rolling', 'cert-rotation']), 'spec');
