// The PEM material of one side of a mutually authenticated TLS connection.

export interface MtlsMaterial {
  /** The CA that signs every certificate of the fleet: the peer's must chain to it. */
  readonly ca: string | Buffer;
  /** This side's certificate (PEM). */
  readonly cert: string | Buffer;
  /** Its private key (PEM). */
  readonly key: string | Buffer;
}
