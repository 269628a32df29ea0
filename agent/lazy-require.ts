// CommonJS packages the agent needs only on some paths (the 2.0 schema
// compiler, the template renderer, the metrics registry), loaded on first use
// instead of at start-up. require() is synchronous, so the functions that use
// them stay synchronous. Each of these costs 50-400 ms of CPU at import (more
// under emulation, where an amphora's first boot waits for the agent);
// `npm run bench:startup` measures the start.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The package, loaded the first time the returned function is called. */
export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}
