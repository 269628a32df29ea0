// The agent's configuration while it runs. PUT /1.0/config replaces the file
// the agent was started with, except for the options the amphora keeps
// (protected.ts); the new settings take effect for whoever reads them next
// (the heartbeat sender subscribes to changes).
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../system/files.js';
import { AgentError } from '../errors.js';
import { ConfigError, parseAgentConfig, type AgentConfig } from './agent-config.js';
import { keepAmphoraValues } from './protected.js';

/** A valid configuration that could not be stored; the agent keeps the one it runs with. */
export class ConfigNotStoredError extends AgentError {
  readonly kind = 'command_failed';
}

export class ConfigStore {
  private listeners: ((config: AgentConfig) => void)[] = [];

  /** `text` is the file as stored: the amphora's own values of the kept options come from it. */
  private constructor(
    readonly path: string,
    private text: string,
    private config: AgentConfig,
  ) {}

  static async load(path: string): Promise<ConfigStore> {
    const text = await readFile(path, 'utf8');
    return new ConfigStore(path, text, parseAgentConfig(text));
  }

  get current(): AgentConfig {
    return this.config;
  }

  /**
   * Validate, keep the amphora's values of the protected options, then
   * atomically replace the config file. Answers the kept options the sent
   * file set otherwise ("[section] key"). Throws ConfigError for bad input,
   * ConfigNotStoredError for anything else.
   */
  async replace(text: string): Promise<string[]> {
    try {
      return await this.store(text);
    } catch (err) {
      // The message is String(err), as Octavia's agent reports it ("Error: ...").
      throw err instanceof ConfigError ? err : new ConfigNotStoredError(String(err));
    }
  }

  private async store(text: string): Promise<string[]> {
    // An INI parser accepts almost any text; a config the agent could not
    // restart with must not replace the one it runs with.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(text)) throw new ConfigError('the configuration contains control characters');
    for (const section of ['haproxy_amphora', 'amphora_agent']) {
      if (!new RegExp(`^\\s*\\[${section}\\]\\s*$`, 'm').test(text)) throw new ConfigError(`the configuration has no [${section}] section`);
    }
    const next = keepAmphoraValues(this.text, text);
    await writeFileAtomic(this.path, next.text, 0o600);
    this.text = next.text;
    this.config = next.config;
    for (const l of this.listeners) l(next.config);
    return next.kept;
  }

  onChange(listener: (config: AgentConfig) => void): void {
    this.listeners.push(listener);
  }
}
