/** Why a request body is refused: the OpenAI `param` naming the field (null for the body as a whole) and what to change. */
export interface RequestFault {
  param: string | null;
  message: string;
}
