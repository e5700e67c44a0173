/**
 * @agent/cli/subjects — the broker subjects the CLI and the daemon speak on. The daemon imports these alone,
 * not the commands.
 */

/** `agent reload` publishes here; every daemon answers on `RELOAD_ACK_SUBJECT`. */
export const RELOAD_SUBJECT = 'control.reload';
export const RELOAD_ACK_SUBJECT = 'control.reload.ack';
/** Members are listed by any daemon on this subject (from the membership table). */
export const CLUSTER_MEMBERS_SUBJECT = 'control.cluster.members';
