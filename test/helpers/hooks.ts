// uvu reports a failing before/after hook only as "0 / N"; print its error.
export function loud(fn: () => Promise<void> | void): () => Promise<void> {
  return async () => {
    try {
      await fn();
    } catch (err) {
      console.error('test hook failed:', err);
      throw err;
    }
  };
}
