// The Web Worker side of docloupe.js: one Host per worker, driven by messages
// {id, op: 'open' | 'search' | 'status' | 'close', arg}. Replies {id, ok, value}; status
// changes are pushed as {op: 'status', value}.
import { Host, asContractError } from './host.js';

const host = new Host((status) => self.postMessage({ op: 'status', value: status }));

self.onmessage = async ({ data }) => {
  const { id, op, arg } = data;
  try {
    self.postMessage({ id, ok: true, value: await host.call(op, arg) });
  } catch (e) {
    self.postMessage({ id, ok: false, value: asContractError(e) });
  }
};
