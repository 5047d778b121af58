import { classifyFetchFailure, type FetchLike } from "../http/fetch";
import { readCapped } from "../http/read-capped";
import { CARD_FETCH_TIMEOUT_MS, MAX_CARD_BYTES } from "./model";

export class CardFetchFailed extends Error {}

const tooLarge = () => new CardFetchFailed(`the card is larger than ${MAX_CARD_BYTES} bytes`);

/** Fetches an agent card: the URL guard applies (the fetch is guarded), with a timeout and a size cap. */
export async function fetchCard(url: URL, fetch: FetchLike): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: "application/json" },
      redirect: "manual",
      signal: AbortSignal.timeout(CARD_FETCH_TIMEOUT_MS),
    });
  } catch (e) {
    throw new CardFetchFailed(classifyFetchFailure(e, CARD_FETCH_TIMEOUT_MS).detail);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new CardFetchFailed(`answered HTTP ${response.status}`);
  }
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > MAX_CARD_BYTES) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const bytes = await readCapped(response.body, MAX_CARD_BYTES);
  if (!bytes) throw tooLarge();
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new CardFetchFailed("the answer is not JSON");
  }
}
