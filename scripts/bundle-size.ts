// What a page downloads from tapegrad, gzipped: dist/index.js bundled as a user's bundler would
// (esbuild, minified, ESM with code splitting), then gzip -9 per chunk. The entry chunk and the
// chunks it imports statically always load; of the chunks it imports on demand, one core build
// (the loader imports exactly one, SIMD or scalar, so the larger counts) and, for `compile` on
// the wasm backend, the code generator (init() loads it). test/package.test.ts holds these
// figures to their budgets and scripts/update-readme.ts writes them into README.
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

// Bytes of gzip for the minified bundle of dist/index.js. 40 KB until the vector ops (38.8 KB
// measured then); array-valued nodes added about 17 KB: their rules in both engines (the core's
// two builds grew 8 KB), the Vec façade and the validator of format version 2. 70 KB since the
// special-function ops (60,346 bytes before, 68,901 after): their coefficients and code ship
// twice, in the JS engine (4.8 KB more gzipped) and in each core build (3.7 KB more); the fused
// run kernels' glue in the core and the façade, the pool's sweep installer and the API's argument
// checks added about 1.2 KB more. 71 KB since the fused forward-tangent sweep for hvp and the
// fast paths of the four interpreted sweeps and of recording (71,775 bytes measured, 1.45 KB over
// the session before; jvp and hvp on fresh tapes 1.4-2.6x faster, record 9.2 -> 5.5 ns/node).
// 72 KB since the SIMD build's own two-lane exp for logSumExp (inlined in its hot loops: copies
// called once per pair measured 30% slower), the planner's use counts in the core and the batch
// reset of adjoints (73,074 bytes measured, 1,299 B more; lse 2.1x the JS mode, from 1.65x; the
// nested tape's first compile 2.07 -> 1.73x its recording, GMM's gradients 2.14 -> 1.36 ns/node).
// 75 KB since fused runs store only what may be read (deferred values and slices, dropped
// adjoints, sums and slices taken into the kernels, the kernel cache, a gradient replay's sum
// left to the reverse kernel, materialization and the sweep again that stores what was left
// out: 2.9 KB, 75,971 bytes measured; Rosenbrock's vector form 14.7 -> 2.2x the plain function).
// 77 KB since the planner's top-level loop search and the bodies' fingerprints moved into the
// core (78,440 bytes measured, 1,837 B more with the repeats check; the branchy loss's first generation 54-62 -> 42-47
// ms on the same machine, its first call 3.0-3.5 -> 2.5-2.7x its recording).
// 78 KB since each op method is its own fast path, so that V8 inlines more of them into a loop
// body (78,932 bytes measured, 100 B more; recording 10.65 -> 7.88 ns/node on the transcendental
// chain through Vars, 9.07 -> 6.39 on the mixed Rosenbrock through Vars, 5.01 -> 4.18 through
// handles: bench/record-inlining.ts). 79 KB since the handle API's bulk inputs and gradients
// (179 B), the interpreted sweeps' region bases kept in locals (142 B: V8 reloads a mutable
// global at every use; a mixed scalar tape's forward and reverse 3.4 -> 3.0 ns/node in bench/ab.ts)
// and the refusal of recording, reset and sweeps of a tape inside its custom rules (229 B), which
// lets the sweeps keep those bases: 80,126 bytes measured. 80 KB since the checks a new-user probe
// asked for (compiled functions' scalar-output and `at` checks, limits and handle ranges named
// exactly, trmv's and defineFunction's options, pow's limits at x = 0 in both engines, softmax
// shifted by its max): 80,896 bytes measured, 821 B more than before them. 81 KB since the next
// probes' fixes (errors that name what is wrong, domain-correct second derivatives, vector handles
// empty or in the scalar API, checkNaN in the pool and on tangents, unsigned views past 2 GiB, a
// BranchChangedError restoring the recorded inputs): 81,802 bytes measured, 906 B more. 82 KB
// since the scheduled replay of tapes too long to fold into generated code (assembly/schedule.ts:
// the list scheduler, the forward by runs of one op, the reverse by stored partials): 83,688
// bytes measured, 1,886 B more; the 10^5-op straight tape's gradient 5.8 -> 4.1 ns/node. 83 KB
// since the schedule works window by window and only where a predictor of the ops says it pays
// (with the reasons it gives otherwise) and compile refuses a new input recorded inside f: 84,242
// bytes measured, 540 B more; 84,616 with the schedule's build in short calls. 84 KB since the
// checks two new-user probes asked for (an empty batch, unchecked tangent and cotangent entries,
// reuse arrays, carrier ids as handles, f resetting its tape, a rule replaying its own compiled
// function or reading a value not computed yet, jvp inputs, gradcheck's step and tolerance) and
// their messages: 85,337 bytes measured, 434 B more. 85 KB since the schedule computes only what
// a compiled function's outputs and guards depend on and masks a unary node's second term in its
// reverse sweep: 86,153 bytes measured, 209 B more (the bench's non-periodic tape 4.5 -> 2.2
// ns/node a gradient, its variant with every node live 6.1 -> 5.5); 86,416 with the planner's
// loop search in short calls, backend 'auto' taken wherever a backend is, and the schedule's runs
// of abs and sqrt written out (74 B; the live variant 5.48 -> 5.26); 86,355 once createTape's
// own backend check, which checkOptions already made, was gone. 86 KB since gradcheck's second
// order and the fixes two new-user probes asked for (a custom forward that fails, a pool's row
// numbers, batch lengths before allocation, a compiled function calling itself while recording,
// vector handle errors, reads inside a rule, matrix products at infinite adjoints and zero
// tangents in both engines, a zero tangent adding nothing for every op, pow's second derivative at
// extreme exponents, stack of matrices, the array-of-one output in bytes, 'require' while the
// generator loads, a foreign init module, the transforms' bounded pool, the pool's close, limits
// named with vector elements) and the handle gradient's run check: 88,059 bytes measured, 1,704 B
// more, with the new messages cut to fit. 88 KB since the op methods' checked paths became
// methods of their own (seven of the mixed Rosenbrock's eight handle ops inlined instead of six)
// and the fixes ten new-user probes asked for (element counts past 2^31, composite vector ops and
// fromBytes within the limits, gradcheck's duality scale and messages, a custom function's Vec
// operand, handle broadcasting over three lengths, per-row hints, the compiled batches' checks
// before recording and their output counts, the pool's shared outputs on the calling thread,
// checkNaN's blame and its tangent errors naming elements and the caller's direction,
// broadcastShapes' checks, opArity's, long loops in functions of their own, the second-order
// fixes of div, atan2 and pow, a compiled function noticing its tape reused, generated modules
// reused by their bytes): 89,159 bytes measured, 1,100 B more. 90 KB since the fixes seven more
// probes asked for (sweeps refused inside a compiled f, a custom jvp only where its tangent
// reaches an output, handle ranges restarting at scattered offsets, free functions with a number
// first, a cached constant needing one free node on every path, variables(x, reuse) taking its
// inputs back, format version 4, batch output counts from the first row, fused runs absorbing a
// parent's slices all or none, a jacobian or hessian past the runtime's arrays, messages naming
// the op, the transform and the entry, gradcheck on pooled tapes, Var and Vec in Node's console,
// asin/acos/atanh near ±1 and atan/asinh/acosh's second derivatives far out in both engines) and
// the planner's cheaper first compile in the core (ops compared eight at a time, one window of
// links, fingerprints of a multiply per item): 91,138 bytes measured, 1,979 B more; 93 KB since
// the fixes nine more probes asked for (options taking undefined in the types, out and values
// checked by name and copied apart from the rows they overlap, checkNaN on hvp's second-order
// adjoints and its blame recomputed per consumer, no tangent through the zero-gradient ops, NaN
// derivatives of a custom node whose forward failed, div, hypot, atan2 and pow at their edges in
// both engines, chunks that failed to download fetched again, errors naming their classes under
// minifiers, CSP refusals explained, 'require' while a module compiles in the background,
// gradcheck judged beyond its stencil's rounding, options checked as read, tangents shrinking a
// capacity a larger recording left, logSumExp's weights at large logits, stale Vars after a
// failed reuse, tangents where the runtime caps memory, a function of many guarded paths
// interpreted): 94,453 bytes measured, 3,315 B more; 95 KB since the fixes eleven more probes
// asked for (fromBytes keeping none of the caller's bytes and taking arrays of any realm, bytes
// tied at a guard by the other engine's rounding, private constructors and one tape per engine,
// a pool's large calls in pieces through bounded scratch, out and values apart, outputs past the
// runtime's arrays as CapacityErrors, no allocation in a handle gradient on either engine,
// lengths that are no counts, stale vector handles past a restart, errors naming the op and the
// vector handle, hypot's, atan2's and digamma's second derivatives without cancellation, Φ taking
// back the rounding of −x/√2, atan2 and asinh on V8's hypot in the core, hypot's second partials
// past a ratio of 1e-154) and the generator's dispatchers written by the core: 96,307 bytes
// measured, 1,854 B more (94 KB was 51 bytes short); 96 KB since the fixes four probes of
// 2026-12-05 asked for ('auto' under a policy refusing WebAssembly, compiled calls with out
// allocating nothing, pow's second derivatives, frozen shapes, NOT_A_NUMBER for non-number
// indices, no gradient lost to a failed sweep, compiled recordings closed, constant values
// readable in compile, the JS engine's 4 GiB cap, errors naming the op or call, GradcheckError's
// result): 97,965 bytes measured, 1,645 B more; 98 KB since the fixes of the next session's probes
// and reviews (custom rules held per tape, checkNaN's tangents of what reaches the outputs, f's own
// array in the transforms, tangents within maxMemoryBytes after a reset, a function's own module
// caches, a failed recording's tape released, a guard flipped before a refusing rule, dot's
// tangent at infinite entries, Φ's rounding taken back below |x| = 1.19, fromBytes' structure
// checks, the policy's error from the sync entries, errors naming every output form, pow's
// derivatives past 2^53 and below 0, hypot's partials at subnormal radii): 99,519 bytes
// measured, 1,554 B more (97 KB was too little by 6 bytes, then 150); 99 KB since the fixes of
// 2026-12-06's probes and review (vector handles and Float64Array operands recording their node
// directly, array-likes read once, errors naming the call, the vector sweeps of both engines taking relu,
// abs and the zero-gradient ops in place and the cheap ops' tangents without a call, a gradient's
// list of inputs reused, custom nodes' visits without closures):
// 100,903 bytes measured, 1,384 B more (98 KB was too little by 551 bytes); 100 KB since the next
// session's (the SIMD core's tangent sweeps of add, sub, mul, neg and square two elements at a
// time, a compiled function's re-records interpreted where its guards churn, a handle op's hint
// for a number): 102,038 bytes measured, 1,135 B more (99 KB was too little by 662 bytes); 101 KB
// since the same session's later fixes (capacities kept across reset shrunk within
// maxMemoryBytes, a refused generated module and a refused WebAssembly.Memory turned into
// reasons and errors, a replay's threshold before generating by the tape's size): 102,417 bytes
// measured, 379 B more (100 KB was too little by 17 bytes); 102 KB since the next session's
// probes (errors naming their call across the API, read-only limits, a compiled function's
// re-entry guard and measured generation cost, grad's options kept, gradcheck's step check):
// 103,427 bytes measured, 832 B more than that session's start (101 KB was too little by 3 bytes).
// 103 KB since the planner's passes in the core got faster (the links' hash, use counts in short
// calls, repeats compared as memory and loops by two repetitions: 288 B) and a compiled
// function's recording warms them (warm.ts, 513 B): 104,830 bytes measured; the branchy loss
// at 10,000 samples: first call 78.0 -> 71.4 ms (medians of 12 fresh processes each,
// alternating). 104 KB since the fused runs' tangent kernels (the core's side: runs in the
// tangent sweep and the reverse sweep with tangents, deferred tangents and their
// materialization, kept adjoints under checkNaN, a sum after a run taken into either, only the
// vector leaves' tangents cleared before a sweep, a deferred slice's tangents read where its
// parent holds them): 106,418 bytes measured, 1,521 B more; a compiled vector Rosenbrock's jvp
// 0.88 -> 0.24 ms, its hvp 2.67 -> 0.63 ms. 105 KB since an hvp leaves a fused run summed into
// its output to the reverse tangent kernel, which absorbs the run's slices as the first-order
// kernel does: 106,743 bytes measured, 325 B more; that hvp 0.63 -> 0.40 ms (2.8x its gradient).
// 106 KB since the core's tanh below |tanh| = 1/2 is a polynomial (eleven coefficients in each
// core build: a vector tanh there 17 -> 9 ns an element), matrix products take four terms a pass
// (llsq's reverse 36 -> 25 us) and a Var gradient reads its list in a loop of its own (2·10^4
// inputs 174 -> 134 us): 107,554 bytes measured, 578 B more (105 KB was too little by 34 bytes).
// 107 KB since the fixes of 2026-12-06's later probes and README audit (a failed chunk imported
// again under a specifier of its own where the browser keeps the failure, compile(f) with no
// options, gradcheck's worst, gather's negative indices, -0 tangents seeded onto -0, options read
// once, f resetting its tape refused by every transform, limits and vector ops naming their call,
// rules run on the caller's object, a stale Var of an earlier compiled recording explained) and
// expectedNodes sizing memory below 32 MiB: 108,670 bytes measured, 469 B more (106 KB was too
// little by 126 bytes). 108 KB since an hvp's second-order terms leave out a zero second
// partial's term past a finite tangent (the core's and the JS engine's rule per operand there;
// Hessians asymmetric, NaN on one side: a probe), div's second order in the tangent's own order,
// messages naming their call, checkOut's instanceof test, the JS engine's written-out
// transcendental ops and partials, and op methods named after their ops: 109,983 bytes
// measured, 419 B more than 107 KB's 109,564. 109 KB since directional batches run their rows
// past the first through the engine's sweeps without the per-row calls (jvpBatch 224 -> 147 ns a
// row, hvpBatch 546 -> 366, vjpBatch 273 -> 147 through the core's batch with seeds), checkNaN throws at every read of a rejected
// value and keeps the gradient before a rejected sweep, and the fixes of a probe of that session
// (new Vec() refused, counts in the singular), and the numerics fixes of its second probe (their
// rare paths out of line in the core, whose sweeps inline the rules): 111,565 bytes measured,
// 1,582 B more (108 KB was too little by 973 bytes). 110 KB since the probes of 2026-12-07:
// a custom forward's TapegradError from another tape or transform gives NaN (the tape kept the
// one refusal of its own), and sum and dot of -0 terms are -0 (partial sums from -0, an empty
// sum +0, in both core builds and the JS engine): 111,664 bytes measured, 99 B more (109 KB was
// too little by 48 bytes). 111 KB since the probes of the next session (2026-12-07): the core's
// forward and reverse sweeps take exp, log, log1p, sin and cos in their first jump, and fourteen
// fixes (a rule's methods and results read under its guard, memory regions sharing the room left
// under maxMemoryBytes, untrusted bytes' output entries counted, products with no entries doing no
// work, fused kernels evicted least recently used, and their messages): 113,180 bytes measured,
// 996 B more (110 KB was too little by 540 bytes). 112 KB since the probes of the session after
// (2026-12-07): batch outputs over another SharedArrayBuffer object copied apart from the rows,
// a handle list read once, a stale Vec over a scalar node refused, the op tables frozen, the
// handle APIs' constructors and opNameOf checking their arguments, broadcastShapes checking before
// multiplying, the memory cap told from a size too large, an adopted core kept: 113,810 bytes
// measured, 627 B more (111 KB was too little by 146 bytes). 113 KB since the same session's later
// probes and two reviews: input arrays whose buffer is gone refused by name, handle lists read
// once into kept arrays, tape.gradient's own nodes across re-entry, and the messages a new user's
// habits meet (a boolean condition, JSON.stringify, [y] to grad, a captured Var, an axis given
// to a reduction, Math on a Var inside compile): 114,903 bytes measured, 1,093 B more than the
// 112 KB figure (which it passed by 215). 114 KB since the next session's probes and reviews
// (2026-12-07): outputs checked by what they hold and again after sweeps that ran custom rules,
// lists and array operands read once, a Vec checked by its size, the transforms' large tape held
// for a second, a vector refused before it is read, capacities of one kind given up for the
// other where memory runs out, logSumExp's dominant-weight second-order term, lgamma'' at its
// poles, and messages (a typed array's Proxy, a flat matrix, a captured Vec, detached buffers):
// 116,603 bytes measured, 1,162 B more than the 113 KB figure (which it passed by 891). 115 KB
// since the session after (2026-12-07): the core inflated by reading its decompression stream
// (Node's Response global cost init() about 40 ms), a recording's wait after an unpaid one judged per
// recording and per node, and the hint for a transform nested in a transform's f: 116,838 bytes
// measured, 145 B more than before them (they passed 114 KB by 102). 116 KB since the core's
// loop search (2026-12-08) charges the nodes it compares and cuts a short loop of a known body
// whose inputs lie elsewhere into items: 117,843 bytes measured, 138 B more than before them
// (they passed 115 KB by 83).
export const SIZE_BUDGET = 116 * 1024;
// More bytes of gzip for the code generator chunk: 6 KB (5.7 KB measured) until it also emitted
// the fused elementwise run kernels (about 1.4 KB more); 8 KB (7,839 B measured) until the planner
// found loops nested in loop bodies and the sweeps were split into functions (9,371 B, +1,532 B);
// 10 KB until the tangent sweeps spelled out their rules per op and hvp got its fused forward
// tangent sweep (10,530 B measured, about 1.2 KB more); 11 KB until bodies of one shape shared a
// function (data-dependent code: the branchy logistic regression's 9,398 nodes of code fell to
// 167; 12,011 B measured, 978 B more than with the partials of eleven more ops written out just
// before); 12 KB until run kernels recomputed deferred values, added up a trailing sum in sum4's
// order, absorbed slices, tried pairs without masks and took a replay's sum in (13,802 B
// measured, 1,791 B more); 14 KB until a body that repeats an earlier one node for node shared its
// description and the planner's links came from the core (15,002 B measured, 1,200 B more; the
// branchy loss's first generation 135 -> 62 ms); 15 KB until values and adjoints carried from one
// iteration to the next stayed in locals, in the replay and tangent sweeps (16,202 B measured,
// 951 B more with the planner's per-step timing and one rewrite per shape; steady gradients of
// the branchy loss 2.1 -> 1.4 ns/node, of the nested tape 3.3 -> 2.5); 16 KB until loops of
// another count shared a description where the facts it holds at every iteration hold at theirs
// (16,872 B measured, 534 B more; the branchy loss's descriptions 33 -> 12, its first generation
// 36.8 -> 32.4 ms); 17 KB until a bucket of bodies of one code folded the members that agree with
// the description of its first and tried the rest again (17,475 B measured, 142 B more; the
// branchy loss accumulated from its first sample: 790 bodies emitted as straight code, its first
// call 135-232 -> 52-58 ms); 18 KB until the planner's passes over every segment became small
// functions over numbered descriptions, and the byte writer wrote a local's access in one call
// (18,861 B measured, 664 B more with the links' new hash and factsHold's indexed loops; the
// branchy loss at 10,000 samples: its first generation's median 50 -> 40-43 ms over 15-20 fresh
// processes each, alternating, its least 34-35 -> 32-34 ms); 19 KB until the run kernels had
// tangent and reverse tangent variants (21,177 B measured, 2,253 B more: their bodies, the first
// tries without masks, a sum taken in, and one per-lane helper the three kernels share); 21 KB
// until the reverse tangent kernel absorbed slices, the tangent kernels' first tries left out
// terms that are constant zeros, and reverse kernels' sum loops took a pair a turn (21,610 B
// measured, 433 B more; a compiled vector Rosenbrock's hvp 0.63 -> 0.37 ms with the core's side,
// its gradient 0.155 -> 0.13); 22 KB until straight code's shapes passed a varying operand's place
// per body and loops of one shape loaded their per-iteration constants (22,819 B measured, 562 B
// more; rows of data-dependent lengths and a softmax loss, interpreted or a function per sample
// before, replay 6x and 2.4x faster); 23 KB since.
export const CODEGEN_BUDGET = 23 * 1024;

export interface BundleSize {
  /** Bytes of gzip a page downloads for the core API: the static closure plus one core build. */
  coreApi: number;
  /** The static closure of the entry chunk alone. */
  always: number;
  /** Bytes more for compile's code generator chunk. */
  generator: number;
  /** Every chunk. */
  all: number;
  /** How many chunks of each kind the entry imports on demand (2 core builds, 1 generator). */
  coreBuilds: number;
  generators: number;
  onDemand: number;
  /** The same bundle without splitting (esbuild's default): one file holding both cores and the
   *  generator, which a page downloads whole. */
  unsplit: number;
}

export async function measureBundle(root: string): Promise<BundleSize> {
  const result = await esbuild.build({
    entryPoints: [path.join(root, 'dist/index.js')], bundle: true, minify: true, format: 'esm', splitting: true,
    platform: 'browser', write: false, metafile: true, outdir: path.join(root, 'size-check'), logLevel: 'silent',
  });
  const gz = new Map(result.outputFiles.map((f) => [path.relative(root, f.path), gzipSync(f.contents, { level: 9 }).length]));
  const outputs = result.metafile.outputs;
  const closure = (chunk: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(chunk)) return seen;
    seen.add(chunk);
    for (const i of outputs[chunk]!.imports) if (i.kind === 'import-statement') closure(i.path, seen);
    return seen;
  };
  const sum = (chunks: Iterable<string>): number => [...chunks].reduce((n, c) => n + gz.get(c)!, 0);
  const entry = Object.keys(outputs).find((o) => outputs[o]!.entryPoint)!;
  const always = closure(entry);
  const onDemand = [...always].flatMap((c) => outputs[c]!.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path));
  const sizeOf = (chunk: string): number => sum([...closure(chunk)].filter((x) => !always.has(x)));
  const coreBuilds = onDemand.filter((c) => /core(-simd)?\.generated/.test(c));
  const generators = onDemand.filter((c) => /codegen/.test(c));
  const unsplit = await esbuild.build({
    entryPoints: [path.join(root, 'dist/index.js')], bundle: true, minify: true, format: 'esm',
    platform: 'browser', write: false, outdir: path.join(root, 'size-check'), logLevel: 'silent',
  });
  return {
    coreApi: sum(always) + Math.max(...coreBuilds.map(sizeOf)),
    always: sum(always),
    generator: generators.length > 0 ? sizeOf(generators[0]!) : 0,
    all: sum(gz.keys()),
    coreBuilds: coreBuilds.length,
    generators: generators.length,
    onDemand: onDemand.length,
    unsplit: unsplit.outputFiles.reduce((n, f) => n + gzipSync(f.contents, { level: 9 }).length, 0),
  };
}
