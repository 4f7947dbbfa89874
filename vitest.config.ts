import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Vitest's default, one worker fewer than the cores, is a single worker on CI's two cores,
    // where the suite's files then ran one after another (569 s on 2026-12-07's machine, against
    // 434 s with two workers: the main process only collects results).
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
