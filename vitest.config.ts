import { defineConfig } from 'vitest/config';

// Vitest 4 ignores `vitest.workspace.ts`; projects are declared here instead.
export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'examples/*'],
  },
});
