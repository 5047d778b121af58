/**
 * Opened secrets by their sealed value, so a hot path (the proxy) opens each one once, not on every request.
 * A new sealed value (new credentials) is a new key; the oldest entries go first past `max`.
 */
export function createOpenedCache<T>(max = 1000) {
  const opened = new Map<string, T>();
  return (sealed: string, open: () => T): T => {
    let value = opened.get(sealed);
    if (value === undefined) {
      value = open();
      if (opened.size >= max) opened.delete(opened.keys().next().value!);
      opened.set(sealed, value);
    }
    return value;
  };
}
