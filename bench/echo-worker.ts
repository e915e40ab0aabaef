// A bare worker thread that answers every batch on its port at once, with no runtime in
// between: the platform's floor for a cross-thread ask (MessagePort post, wake-up,
// structured clone both ways), measured next to the runtime's asks.
import { workerData, type MessagePort } from 'node:worker_threads';

const port = (workerData as { port: MessagePort }).port;
port.on('message', (batch: unknown[]) => {
  port.postMessage(batch.map(() => ({ k: 'reply', id: 1, ok: true, value: 0 })));
});
