// Prints the plain closing line CI reads ("Tests: N passed, N failed, N skipped") from the
// JSON report vitest writes during `npm test`.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? 'test-artifacts/vitest.json';
const report = JSON.parse(readFileSync(file, 'utf8'));
const skipped = report.numPendingTests + report.numTodoTests;
console.log(`Tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped`);
