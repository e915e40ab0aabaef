// Typing of actor protocols. An actor's protocol is ONE discriminated union on `type`,
// declared in src/messages. A member that expects a reply is intersected with `Ask<R>`;
// the brand exists only in the type system, so messages on the wire are plain objects.

declare const replyBrand: unique symbol;
declare const protocolBrand: unique symbol;

/** Marks a message as a request whose reply has type `R`. */
export interface Ask<R> {
  readonly [replyBrand]: R;
}

export interface Message {
  readonly type: string;
}

type Unbrand<M> = M extends unknown ? Omit<M, typeof replyBrand> : never;

/** Messages of `M` sent with `tell` (no reply expected). */
export type TellOf<M extends Message> = Unbrand<Exclude<M, Ask<unknown>>>;

/** Messages of `M` sent with `ask`. */
export type AskOf<M extends Message> = Unbrand<Extract<M, Ask<unknown>>>;

/** The message of `M` whose discriminant is `T`, as a sender builds it. */
export type MessageOf<M extends Message, T extends M['type']> = Unbrand<Extract<M, { type: T }>>;

/** The reply type of the `T` member of `M`; `void` for tells. */
export type ReplyOf<M extends Message, T extends M['type']> = Extract<M, { type: T }> extends Ask<infer R> ? R : void;

/**
 * A typed name: where an actor of protocol `M` can be reached. Declared once, beside the
 * protocol in src/messages, so a ref's protocol comes from its address instead of from
 * the caller. A plain `{ name }` at run time: it travels inside messages (a reply-to, a
 * subscriber) across threads as it is. Contravariant in `M`, as a message sink is: an
 * actor that accepts more may stand where fewer messages are sent (a subscriber whose
 * protocol includes the events), never one that accepts less.
 */
export interface Address<M extends Message> {
  readonly name: string;
  readonly [protocolBrand]?: (m: M) => void;
}

export function address<M extends Message>(name: string): Address<M> {
  return { name };
}
