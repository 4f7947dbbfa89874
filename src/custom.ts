// User-defined differentiable functions: a forward and a VJP (optionally a JVP and the second
// order rule) written in plain TypeScript over numbers. Each call records n/2 arg nodes carrying
// the operands and one custom node; the sweeps call back into these rules once per visit.
import type { Backend, CustomHandler } from './backend.ts';
import { MissingRuleError, NotANumberError, ShapeError, TapegradError, describe, isArrayLike } from './errors.ts';
import { readOptions } from './options.ts';
import { Var, customOperand, type Operand, type Tape } from './tape.ts';
import { Vec } from './vector.ts';

/** The rules of a function made by `defineFunction`: `forward` and `vjp` are required; `jvp`
 *  and `vjpTangent` serve forward mode and second order. */
export interface CustomRule {
  /** Shown in errors. */
  name: string;
  /** y = f(xs). */
  forward(xs: Float64Array): number;
  /** g * dy/dxs, one entry per operand. */
  vjp(xs: Float64Array, y: number, g: number): ArrayLike<number>;
  /** Optional: dy = sum_k dy/dx_k * ts[k]. Needed for jvp, forward-mode jacobian and hvp. */
  // Properties, not optional methods: with exactOptionalPropertyTypes an explicit undefined (a
  // rule built with `cond ? rule : undefined`) was refused (a probe), where the runtime takes it.
  jvp?: ((xs: Float64Array, y: number, ts: Float64Array) => number) | undefined;
  /** Optional: d/dt of vjp(xs + t*ts, y(t), g) at t = 0, i.e. g * (Hessian of f) · ts. Needed
   *  with jvp for hvp and hessian through this function. */
  vjpTangent?: ((xs: Float64Array, y: number, g: number, ts: Float64Array) => ArrayLike<number>) | undefined;
}

/** A recorded function made by `defineFunction`: call it with Vars and numbers, at least one of
 *  them a Var (its tape records the node; numbers alone are a `NotANumberError`). */
export type CustomFunction = (...operands: Operand[]) => Var;

/**
 * Defines a new differentiable function from its own rules, e.g. a stable logSumExp or a call
 * into an external solver. Calling it records one node; every sweep that reaches the node calls
 * the matching rule once (a JS call and a small Float64Array per visit).
 */
export function defineFunction(rule: CustomRule): CustomFunction {
  // Which key is wrong, and what it got (a probe: `{ vjp: 5 }` and `null` read alike).
  if (rule === null || typeof rule !== 'object') throw new TapegradError('INVALID_ARGUMENT', `defineFunction needs a rule object with forward(xs) and vjp(xs, y, g), got ${describe(rule)}`);
  for (const key of ['forward', 'vjp'] as const) {
    if (typeof rule[key] !== 'function') {
      throw new TapegradError('INVALID_ARGUMENT', `defineFunction needs at least forward(xs) and vjp(xs, y, g) functions; ${key} is ${describe(rule[key])}`);
    }
  }
  // Errors name the function by it (a probe got "custom function 'undefined' has no jvp rule").
  if (typeof rule.name !== 'string' || rule.name === '') {
    throw new TapegradError('INVALID_ARGUMENT', `defineFunction needs a name (a non-empty string), got ${describe(rule.name)}`);
  }
  // A misspelt rule (jpv for jvp) surfaced only at the first sweep that needed it: a function
  // under another name is refused. The rules run with the caller's object as `this`, so a class
  // may keep helpers and state beside them (a probe's rules on a copy threw TypeErrors).
  const rules: Record<string, unknown> = {};
  for (const key in RULES) rules[key] = (rule as unknown as Record<string, unknown>)[key];
  for (const key in rule) if (!(key in rules) && typeof (rule as unknown as Record<string, unknown>)[key] === 'function') rules[key] = 0;
  readOptions(rules, 'defineFunction', RULES);
  return (...operands: Operand[]): Var => {
    // A Vec's tape refuses it in operandIds with the ShapeError f(x, v) gets.
    const anchor = operands.find((o: unknown) => o instanceof Var || o instanceof Vec) as Var | Vec | undefined;
    if (!anchor) throw new NotANumberError(`${rule.name}: needs at least one Var operand, got ${operands.length ? operands.map(describe).join(', ') : 'no arguments'}`);
    // A Vec is refused naming the function (the tape's own check named neither it nor the operand).
    const k = operands.findIndex((o: unknown) => o instanceof Vec);
    if (k >= 0) {
      const v = operands[k] as unknown as Vec;
      throw new ShapeError(`${rule.name}: operand ${k} is a Vec of shape [${v.shape.join(', ')}]; a custom function takes scalar Vars and numbers (take .get(i), .sum() or another reduction)`, rule.name, [v.shape]);
    }
    const tape = anchor.tape;
    // Each operand checked naming the function and the operand (the tape's own errors named
    // neither: a probe's f(a, b, 'x') read "expected a Var or a number, got the string").
    for (let j = 0; j < operands.length; j++) {
      const o: unknown = operands[j];
      if (typeof o === 'number') continue;
      if (!(o instanceof Var)) throw new NotANumberError(`${rule.name}: operand ${j} must be a Var or a number, got ${describe(o)}`);
      tape.index(o, `${rule.name}: operand ${j}`);
    }
    const nodes = tape.installCustomHandler((engine) => new CustomNodes(engine, tape)) as CustomNodes;
    const ids = tape.operandIds(operands, ((operands.length + 1) >> 1) + 1);
    return tape.recordCustom(nodes.idOf(rule), ids);
  };
}

const RULES = { name: 'string', forward: 'function', vjp: 'function', jvp: 'function', vjpTangent: 'function' } as const;

type RuleMethod = (this: CustomRule, ...args: unknown[]) => unknown;

/** @internal The handler a tape installs on its engine for custom nodes. */
export class CustomNodes implements CustomHandler {
  constructor(private readonly engine: Backend, private readonly tape: Tape) {}

  // The rules of this tape's custom nodes (a node holds its rule's index), until a reset drops
  // the nodes: one list for the process kept every rule defined, and what its closures held,
  // for the life of the process (a probe: a rule per request over 1 MB of data grew RSS 1 MB a
  // request).
  private readonly rules: CustomRule[] = [];
  private readonly ids = new Map<CustomRule, number>();

  idOf(rule: CustomRule): number {
    let id = this.ids.get(rule);
    if (id === undefined) this.ids.set(rule, (id = this.rules.push(rule) - 1));
    return id;
  }

  clear(): void {
    this.rules.length = 0;
    this.ids.clear();
  }

  // Node i's operand values, a fresh array each visit (the rule may keep it). Its operands' node
  // ids are read again where terms go to them (`customOperand`), not kept in an array across the
  // rule's call, which may run a forward sweep of this tape's other custom nodes.
  operandValues(i: number): Float64Array {
    const { a, b, val } = this.engine.views;
    const n = b[i]!;
    const xs = new Float64Array(n);
    for (let k = 0; k < n; k++) xs[k] = val[customOperand(a, b, i, k)]!;
    return xs;
  }

  private ruleOf(i: number): CustomRule {
    return this.rules[this.engine.views.a[i]!]!;
  }

  private operandCount(i: number): number {
    return this.engine.views.b[i]!;
  }

  private tangentsOf(i: number): Float64Array {
    const { a, b } = this.engine.views, tan = this.engine.views.tan!;
    const ts = new Float64Array(b[i]!);
    for (let k = 0; k < ts.length; k++) ts[k] = tan[customOperand(a, b, i, k)]!;
    return ts;
  }

  // A rule's method called with the tape closed to recording, as insideRule does, without a
  // closure per visit (a probe: 1.15 KB a custom node a replay, with the arrays above).
  private call(name: 'forward' | 'jvp', rule: CustomRule, arity: 1 | 3, xs: Float64Array, y = 0, ts?: Float64Array): unknown {
    const saved = this.tape.enterRule();
    try {
      return this.invoke(name, rule, arity, xs, y, 0, ts);
    } finally {
      this.tape.leaveRule(saved);
    }
  }

  // The rule's method, read at each call (the rule object is the user's: one replaced by a
  // non-function after defineFunction was a raw TypeError mid-sweep, a probe), and called with
  // the arguments it is documented with, `arity` of them. Only under the guard: a getter for the
  // method recorded on the tape mid-sweep (a review probe: a wrong gradient, silently).
  private invoke(name: 'forward' | 'vjp' | 'jvp' | 'vjpTangent', rule: CustomRule, arity: 1 | 3 | 4, xs: Float64Array, y: number, g: number, ts?: Float64Array): unknown {
    const method = rule[name] as RuleMethod | undefined;
    if (typeof method !== 'function') throw new TapegradError('INVALID_ARGUMENT', `${rule.name}.${name} is ${describe(method)}, not a function (the rule object was changed after defineFunction)`);
    return arity === 1 ? method.call(rule, xs) : arity === 3 ? method.call(rule, xs, y, ts ?? g) : method.call(rule, xs, y, g, ts);
  }

  // Whether the rule has an optional method, read under the guard as `invoke` reads it.
  private hasRule(rule: CustomRule, name: 'jvp' | 'vjpTangent'): boolean {
    const saved = this.tape.enterRule();
    try {
      return Boolean(rule[name]);
    } finally {
      this.tape.leaveRule(saved);
    }
  }

  // A vjp's (or vjpTangent's) terms for node i, one per operand, called and read under one
  // guard: its result's length and entries may be accessors or a Proxy, which recorded on the
  // tape, swept it or reset it mid-sweep, silently (a wrong gradient, a probe).
  private terms(name: 'vjp' | 'vjpTangent', rule: CustomRule, i: number, xs: Float64Array, y: number, g: number, ts?: Float64Array): Float64Array {
    const n = this.operandCount(i), out = new Float64Array(n);
    const saved = this.tape.enterRule();
    try {
      const values = this.invoke(name, rule, name === 'vjp' ? 3 : 4, xs, y, g, ts) as ArrayLike<number>;
      if (values == null || values.length !== n) {
        throw new TapegradError('INVALID_ARGUMENT', `${rule.name}.${name} must return ${n} ${n === 1 ? 'number' : 'numbers'} (one per operand), got ${isArrayLike(values) ? values.length : describe(values)}`);
      }
      for (let k = 0; k < n; k++) out[k] = checkResult(values[k]!, rule, name);
    } finally {
      this.tape.leaveRule(saved);
    }
    return out;
  }

  /** The node whose rule's own failure stopped the last forward sweep (see Tape.evaluate), or -1. */
  failedForward = -1;
  thrownAt = -1;

  // Nodes whose forward failed (their value NaN, as an invalid IEEE operation gives): their rules
  // are not asked for derivatives at a point the forward refused, and give NaN as such an
  // operation's partials would (a probe's log that refused x <= 0 got a finite gradient from its
  // vjp). A node's entry goes when its forward next succeeds; each sweep runs after the forward of
  // every custom node it meets, so an entry left by an earlier recording is gone by then.
  private readonly failed = new Set<number>();

  forward(i: number): void {
    const rule = this.ruleOf(i), xs = this.operandValues(i);
    let y: unknown;
    this.tape.ruleForwardAt = i;
    try {
      y = this.call('forward', rule, 1, xs);
    } catch (error) {
      // The rule's own failure, for Tape.evaluate to go on past; this tape's refusal of what the
      // rule did to it leaves the node to compute at the next read.
      this.thrownAt = i;
      if (error !== this.tape.refusal) this.fail(i);
      throw error;
    } finally {
      this.tape.ruleForwardAt = -1;
    }
    if (typeof y !== 'number') this.fail(i);
    else if (this.failed.size > 0) this.failed.delete(i);
    this.engine.views.val[i] = checkResult(y, rule, 'forward');
  }

  ruleName(i: number): string {
    return this.rules[this.engine.views.a[i]!]!.name;
  }

  private fail(i: number): void {
    this.failedForward = i;
    this.failed.add(i);
  }

  // NaN into each operand's entry of `target` (adjoints, or their tangents).
  private poison(i: number, target: Float64Array): void {
    const { a, b } = this.engine.views;
    for (let k = 0, n = b[i]!; k < n; k++) target[customOperand(a, b, i, k)] += NaN;
  }

  // The rule's terms into each operand's entry of `target` (adjoints, or their tangents).
  private addInto(target: Float64Array, i: number, terms: Float64Array): void {
    const { a, b } = this.engine.views;
    for (let k = 0; k < terms.length; k++) target[customOperand(a, b, i, k)] += terms[k]!;
  }

  reverse(i: number, g: number): void {
    if (this.failed.has(i)) return this.poison(i, this.engine.views.adj);
    const rule = this.ruleOf(i), xs = this.operandValues(i);
    // The views read after the rule ran, whatever it did.
    const terms = this.terms('vjp', rule, i, xs, this.engine.views.val[i]!, g);
    this.addInto(this.engine.views.adj, i, terms);
  }

  tangent(i: number): void {
    const rule = this.ruleOf(i), xs = this.operandValues(i);
    const ts = this.tangentsOf(i);
    // As for primitive ops: no tangent in, no tangent out, and no need for a jvp rule.
    if (ts.every((t) => t === 0)) {
      this.engine.views.tan![i] = 0;
      return;
    }
    if (this.failed.has(i)) {
      this.engine.views.tan![i] = NaN;
      return;
    }
    // Its tangent reaches nothing the sweep serves (a comparison, stopGradient, the branch a
    // select does not take, no use at all): 0, with or without a jvp rule, which is not asked at
    // a point the function's own branch may keep it from (a probe's safe log threw from its jvp
    // at -1 in the untaken branch, where grad never asked its vjp).
    if (!this.tape.tangentReaches(i)) {
      this.engine.views.tan![i] = 0;
      return;
    }
    if (!this.hasRule(rule, 'jvp')) throw missing(rule, 'jvp', 'jvp, forward-mode jacobian and hvp');
    this.engine.views.tan![i] = checkResult(this.call('jvp', rule, 3, xs, this.engine.views.val[i]!, ts), rule, 'jvp');
  }

  reverseTangent(i: number, g: number, gTangent: number): void {
    const rule = this.ruleOf(i), xs = this.operandValues(i);
    const { adj, tanAdj, val } = this.engine.views;
    const y = val[i]!;
    const ts = this.tangentsOf(i);
    // g·H·ts vanishes where no tangent reaches the node: then it needs no vjpTangent rule (as
    // the tangent sweep needs no jvp there).
    const curved = g !== 0 && ts.some((t) => t !== 0);
    if (this.failed.has(i)) {
      if (g !== 0) this.poison(i, adj);
      if (curved || gTangent !== 0) this.poison(i, tanAdj!);
      return;
    }
    if (curved && !this.hasRule(rule, 'vjpTangent')) throw missing(rule, 'vjpTangent', 'hvp and hessian');
    // Each rule called gets operands of its own, as each visit does (a vjp writing its weights
    // into xs handed them to vjpTangent as operands: a wrong hvp, a probe).
    if (g !== 0) {
      const terms = this.terms('vjp', rule, i, xs, y, g);
      this.addInto(this.engine.views.adj, i, terms);
      if (curved) {
        const tangentTerms = this.terms('vjpTangent', rule, i, this.operandValues(i), y, g, ts);
        this.addInto(this.engine.views.tanAdj!, i, tangentTerms);
      }
    }
    if (gTangent !== 0) {
      const terms = this.terms('vjp', rule, i, this.operandValues(i), y, gTangent);
      this.addInto(this.engine.views.tanAdj!, i, terms);
    }
  }
}


function checkResult(y: unknown, rule: CustomRule, what: string): number {
  if (typeof y !== 'number') throw new NotANumberError(`${rule.name}.${what} returned ${describe(y)}, not a number`);
  return y;
}

function missing(rule: CustomRule, name: 'jvp' | 'vjpTangent', needed: string): MissingRuleError {
  return new MissingRuleError(
    `custom function '${rule.name}' has no ${name} rule, which ${needed} through it need; add ${name} to its definition`,
    rule.name,
    name,
  );
}
