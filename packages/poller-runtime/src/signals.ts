/**
 * Aborts `target` when `source` aborts (with the same reason); returns the function that undoes the link.
 * Cheaper than `AbortSignal.any` at every tick: on Node 20 each `any` registers its composite signal on
 * every source until a garbage collection.
 */
export function linkAbort(source: AbortSignal, target: AbortController): () => void {
  if (source.aborted) {
    target.abort(source.reason);
    return () => {};
  }
  const onAbort = () => target.abort(source.reason);
  source.addEventListener('abort', onAbort, { once: true });
  return () => source.removeEventListener('abort', onAbort);
}
