// What tests/wasm/run.sh passes the JS suites: a missing variable stops a suite at once.
export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run the suites through tests/wasm/run.sh)`);
  return v;
}
