/**
 * A response body for assertions. Tests compare whole payloads with `toEqual`,
 * so a loose type here is the honest one: the assertion is the type check.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Payload = any;

export async function json(res: Response): Promise<Payload> {
  return res.json();
}
