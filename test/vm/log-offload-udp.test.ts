// Octavia's log offloading over UDP on a booted amphora
// (test/helpers/log-offload-suite.ts). Runs alone with
// `node dist/test/run.js vm/log-offload-udp`.
import { logOffloadSuite } from '../helpers/log-offload-suite.js';

logOffloadSuite('UDP');
