/**
 * @agent/chat-cluster — chat agents across several daemons: one owner per single-consumer channel instance
 * (a fenced lease), channel state in PostgreSQL written with the owner's fence, and inbound messages through
 * a NATS JetStream stream partitioned by chat, one consumer per partition.
 */
/** The stream's default number of partitions. */
export const DEFAULT_INBOUND_PARTITIONS = 32;
