// The file piscina starts each worker with. piscina loads a worker's file with require() first
// and with import() where that gives no handler; Node 20 can require() an ES module, and a
// worker.js begun that way and then imported failed now and then with an internal assertion
// ("Unexpected status of a module that is imported again after being required": a pool's
// register threw WorkerExitError about once in 700 pool starts, a soak probe). This file is
// CommonJS, so require() takes it whole, and the ES module is only ever imported.
module.exports = import('./worker.js').then((module) => module.default);
