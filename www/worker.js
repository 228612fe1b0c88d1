// The Web Worker side of docloupe.js: one Host per worker, driven by messages
// {id, op: 'open' | 'search' | 'status' | 'close', arg}. Replies {id, ok, value}; status
// changes are pushed as {op: 'status', value}.
import { Host, contractError } from './host.js';

const host = new Host((status) => self.postMessage({ op: 'status', value: status }));

self.onmessage = async ({ data }) => {
  const { id, op, arg } = data;
  try {
    let value;
    if (op === 'open') value = await host.open(arg);
    else if (op === 'search') value = host.search(arg);
    else if (op === 'status') value = host.status();
    else if (op === 'close') value = host.close();
    else throw contractError('INTERNAL_ERROR', `unknown worker operation ${op}`);
    self.postMessage({ id, ok: true, value });
  } catch (e) {
    const error = e && typeof e.errorCode === 'string' ? e : contractError('INTERNAL_ERROR', String(e?.message ?? e));
    self.postMessage({ id, ok: false, value: error });
  }
};
