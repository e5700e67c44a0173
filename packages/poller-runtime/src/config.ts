/**
 * @agent/poller-runtime/config — what a host needs to read `pollers.yaml` without loading the runner: the
 * section reader, its result and the file's schemas. A daemon whose pollers are off loads only this.
 */
export {
  POLLERS_FILE,
  POLLERS_FILE_CODES,
  POLLERS_SECTION,
  pollersOf,
  pollersSectionReader,
  type EnvelopeRejectedJob,
  type LoadedJob,
  type PollersSection,
  type PollersSectionOptions,
} from './pollers-section.js';
export type { LegacyJobSource } from './legacy-jobs.js';
export { jobSchema, pollersFileSchema, type PollerJob, type PollersSettings } from './pollers-schema.js';
