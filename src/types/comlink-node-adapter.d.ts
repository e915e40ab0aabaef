// comlink ships this adapter without a .d.mts beside the .mjs, so NodeNext resolution
// cannot see its types; this is its published signature.
declare module 'comlink/dist/esm/node-adapter.mjs' {
  import type { Endpoint } from 'comlink';
  export interface NodeEndpoint {
    postMessage(message: any, transfer?: any[]): void;
    on(type: string, listener: (...args: any[]) => void): unknown;
    off(type: string, listener: (...args: any[]) => void): unknown;
    start?: () => void;
  }
  export default function nodeEndpoint(nep: NodeEndpoint): Endpoint;
}
