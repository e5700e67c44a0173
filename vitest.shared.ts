import { defineProject } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources in tests (the `@agent/source`
// export condition), so tests never depend on a stale `dist/`.
export const shared = defineProject({
  resolve: { conditions: ['@agent/source'] },
  ssr: { resolve: { conditions: ['@agent/source'] } },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    passWithNoTests: true,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
