// Structured logging (pino: JSON lines, cheap when a level is off, and the
// same shape for every module). Level from AMPHORA_AGENT_LOG_LEVEL, default info.
import { pino, type Logger } from 'pino';

export type { Logger };

export const rootLogger: Logger = pino({
  name: 'amphora-agent',
  level: process.env.AMPHORA_AGENT_LOG_LEVEL ?? 'info',
  base: { pid: process.pid },
});
