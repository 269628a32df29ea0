// Octavia's log offloading on booted amphorae, over TCP and over UDP (one
// amphora each, booted side by side; test/helpers/log-offload-suite.ts).
// Runs alone with `node dist/test/run.js vm/log-offload`.
import { logOffloadSuites } from '../helpers/log-offload-suite.js';

logOffloadSuites(['TCP', 'UDP']);
