/** The poller kinds that ship with the daemon. */
export const builtinKinds: readonly unknown[] = [];
