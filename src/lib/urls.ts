/**
 * A URL as a message may show it: its password replaced by `***`, everything between the user's
 * name and the last `@`, so a password holding `/`, `:` or `@` is hidden whole.
 */
export function maskUrl(url: string): string {
  const start = url.indexOf('://');
  const at = url.lastIndexOf('@');
  if (start < 0 || at < start) return url;
  const credentials = url.slice(start + 3, at);
  const colon = credentials.indexOf(':');
  if (colon < 0) return url;
  return `${url.slice(0, start + 3)}${credentials.slice(0, colon)}:***${url.slice(at)}`;
}
