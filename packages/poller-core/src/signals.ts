/**
 * Aborts `target` when `source` aborts (with the same reason); returns the function that undoes the link.
 * Used instead of `AbortSignal.any` for the long-lived job signals: on Node 20 every `any` leaves an entry
 * on its source signals until a full GC, and a job's signal lives as long as the job.
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
