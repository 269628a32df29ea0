// `amphora-agent interface up|down <ifname|all> [--config-file PATH]`:
// Octavia's amphora-interface. amphora-netns.service runs `interface up all`
// at boot, which also brings the NICs recorded in plugged_interfaces back into
// the amphora namespace. Exit 1 when any interface failed (the others are
// still done).
import { ConfigStore } from '../config/store.js';
import { bringInterfaces, networkSettings } from '../net/interfaces.js';
import { INTERFACE_USAGE, UsageError } from './usage.js';

export async function interfaceCommand(args: string[]): Promise<number> {
  const i = args.indexOf('--config-file');
  const configFile = i >= 0 ? args[i + 1] : '/etc/octavia/amphora-agent.conf';
  const positional = args.filter((_a, k) => i < 0 || (k !== i && k !== i + 1));
  const [direction, which] = positional;
  if ((direction !== 'up' && direction !== 'down') || !which || positional.length !== 2 || !configFile) {
    throw new UsageError(`usage:\n${INTERFACE_USAGE}`);
  }
  const store = await ConfigStore.load(configFile);
  const outcomes = await bringInterfaces(networkSettings(store.current), direction, which);
  for (const o of outcomes) {
    const what = o.error ? `failed: ${o.error}` : `${direction}${o.moved ? ' (moved back into the namespace)' : ''}`;
    (o.error ? process.stderr : process.stdout).write(`${o.name}: ${what}\n`);
  }
  return outcomes.some((o) => o.error) ? 1 : 0;
}
