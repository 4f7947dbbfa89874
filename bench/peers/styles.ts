// How each peer expresses each workload (kept apart from the peer modules, which import their
// libraries: the runner reads these without loading TensorFlow.js or jax-js).
import type { WorkloadKind } from '../workloads.ts';

export const TFJS_STYLE: Record<WorkloadKind, string> = {
  chain: 'scalar (0-d tensors)',
  rosenbrock: 'vectorised',
  'advection-lw': 'vectorised over the grid, loop over time',
  'advection-toon': 'vectorised over the grid, loop over time',
  mlp: 'vectorised (matmul over the batch)',
  lse: 'vectorised (max, exp, sum, log: GradBench\'s TF.js form)',
  llsq: 'vectorised (matvec)',
  logreg: 'vectorised (matvec, softplus)',
  gmm: 'vectorised over points x components (batched matmul, logSumExp)',
  ode: 'vectorised over the n values (shift by slice and concat), loop over the RK4 steps',
  tiny: 'scalar (0-d tensors)',
};

export const JAX_STYLE: Record<WorkloadKind, string> = {
  chain: 'scalar (shape-[1] arrays)',
  rosenbrock: 'vectorised',
  'advection-lw': 'vectorised over the grid, loop over time',
  'advection-toon': 'vectorised over the grid, loop over time',
  mlp: 'vectorised (matmul over the batch)',
  lse: 'vectorised (max, exp, sum, log: GradBench\'s JAX form)',
  llsq: 'vectorised (matvec)',
  logreg: 'vectorised (matvec, nn.softplus)',
  gmm: 'vectorised over points x components (batched matmul for GradBench\'s einsum, nn.logsumexp), as GradBench\'s JAX gmm',
  ode: 'vectorised as GradBench\'s JAX ode (roll and where for the shift), the RK4 steps unrolled (jax-js has no lax.scan)',
  tiny: 'scalar (0-d arrays)',
};
