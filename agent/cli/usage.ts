// The CLI's usage texts and its error for a wrong command line, apart from the
// commands themselves: main.ts prints usage without loading any command.
import { AgentError } from '../errors.js';

export class UsageError extends AgentError {
  readonly kind = 'invalid_input';
}

export const RENDER_USAGE = `  render SPEC.json [--haproxy PATH | --haproxy-version X.Y] [--config-file PATH]
              print the haproxy (and keepalived LVS) configs a load-balancer spec renders to
  check SPEC.json [--haproxy PATH] [--cert-dir DIR] [--config-file PATH]
              render, then validate with the real haproxy / keepalived and print their verdict
              (with --config-file and its tune_from_amphora_details, the default, haproxy is sized
              from this machine's CPUs and memory as on an amphora; without, haproxy's defaults)`;

export const INTERFACE_USAGE = `  interface up|down IFNAME|all [--config-file PATH]
              configure (or unconfigure) amphora namespace interfaces from
              their interface files; "up all" first moves recorded NICs back
              into the namespace (amphora-netns.service, after a reboot)`;
