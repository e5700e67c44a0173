/** Not implemented yet. */
export const notImplemented = true;
