// The soak: 10^4 record/backward/reset cycles of a 1000-node graph per backend, run by
// test/soak-run.ts in a child process (it needs --expose-gc to measure the heap after a full
// GC). Gradients match the closed form at every check, the engine's memory does not grow after
// cycle 1000, and the JS heap after GC drifts by less than 1 MB. `npm run soak` runs 10^6 cycles.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { SoakFigures } from './soak-run.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CYCLES = 10_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function runSoak(nodeFlags: readonly string[], args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...nodeFlags, '--import', 'tsx', 'test/soak-run.ts', ...args], { cwd: ROOT, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

function figuresOf(run: Run): SoakFigures[] {
  return run.stdout.split('\n').filter((line) => line.startsWith('SOAK ')).map((line) => JSON.parse(line.slice(5)) as SoakFigures);
}

describe('soak', () => {
  it.each(['wasm', 'js'] as const)(`%s: ${CYCLES} cycles, right gradients, flat engine memory, heap drift under 1 MB`, async (backend) => {
    const run = await runSoak(['--expose-gc'], [String(CYCLES), backend]);
    const figures = figuresOf(run);
    expect(figures, run.stderr).toHaveLength(1);
    const f = figures[0]!;
    console.log(
      `[soak] ${backend}: ${f.cycles} cycles of ${f.nodesPerCycle} nodes in ${f.seconds.toFixed(2)} s; ${f.checks} checks, ` +
        `max relative error ${f.maxRelativeError.toExponential(1)}; engine ${f.engineBytesAtBaseline} -> ${f.engineBytesAtEnd} bytes ` +
        `after cycle ${f.baselineCycle}; heap after GC ${f.heapAtBaseline} -> ${f.heapAtEnd} (drift ${f.heapDrift} bytes)`,
    );
    expect(f.failures).toEqual([]);
    expect(run.code).toBe(0);
    expect(f.backend).toBe(backend);
    expect(f.cycles).toBe(CYCLES);
    expect(f.nodesPerCycle).toBeGreaterThanOrEqual(1000);
    expect(f.checks).toBeGreaterThanOrEqual(100);
    expect(f.maxRelativeError).toBeLessThanOrEqual(1e-12);
    expect(f.baselineCycle).toBe(1000);
    expect(f.engineGrowth).toBe(0);
    expect(Math.abs(f.heapDrift)).toBeLessThan(2 ** 20);
  }, 300_000);

  it('refuses to run without --expose-gc (it could not measure the heap)', async () => {
    const run = await runSoak([], ['10']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--expose-gc/);
    expect(figuresOf(run)).toEqual([]);
  });
});
