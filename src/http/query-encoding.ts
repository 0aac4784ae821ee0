import { validationError } from '../lib/errors.ts';

/**
 * Refuses a query string whose percent-encoding is not UTF-8: the parser would pass it on
 * undecoded and a filter would compare raw escapes; a 400 naming the parameter is clearer.
 */
export function checkQueryEncoding(url: string): void {
  const start = url.indexOf('?');
  if (start === -1) return;
  for (const pair of url.slice(start + 1).split('&')) {
    try {
      decodeURIComponent(pair.replace(/\+/g, ' '));
    } catch {
      const name = pair.split('=')[0];
      let field = name;
      try {
        field = decodeURIComponent(name);
      } catch {
        /* the name itself is broken: keep it as sent */
      }
      throw validationError({ [field.slice(0, 100) || '(query)']: 'Must be valid percent-encoded UTF-8' });
    }
  }
}
