export const notImplemented = true;
