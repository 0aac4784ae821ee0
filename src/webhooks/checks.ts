/** What an endpoint's URL and event types must be, checked when it is saved. */
import { unknownEventType } from '../events/schema.ts';
import { validationError } from '../lib/errors.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { isPublicAddress, literalAddressOf } from './address.ts';

export interface WebhookSettings {
  box: SecretBox;
  allowPrivateNetworks: boolean;
}

/**
 * Refuses at save what can never be delivered: a scheme other than https (or http with private
 * networks allowed), credentials, a fragment, or a non-public IP literal. Names are checked at delivery.
 */
export function checkUrl(raw: string, settings: WebhookSettings): void {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw validationError({ url: 'Must be an absolute URL' });
  }
  // `https:host` parses as https://host/; what is stored and shown is what was sent, so it is spelt out.
  if (!/^https?:\/\//i.test(raw)) throw validationError({ url: 'Must be an absolute URL (https://host/path)' });
  if (url.port === '0') throw validationError({ url: 'Must not name port 0' });
  const schemes = settings.allowPrivateNetworks ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol))
    throw validationError({
      url: settings.allowPrivateNetworks ? 'Must be an https or http URL' : 'Must be an https URL',
    });
  if (url.username !== '' || url.password !== '') throw validationError({ url: 'Must not contain credentials' });
  if (url.hash !== '') throw validationError({ url: 'Must not contain a fragment (#...)' });
  const literal = literalAddressOf(url.hostname);
  if (!settings.allowPrivateNetworks && literal !== null && !isPublicAddress(literal)) {
    throw validationError({ url: 'Must not point at a private, loopback, link-local or reserved address' });
  }
}

/** An endpoint's event types name types there are: a typo would deliver nothing, silently. */
export function checkEventTypes(types: readonly string[] | undefined): void {
  const unknown = types && unknownEventType(types);
  if (unknown) throw validationError({ eventTypes: unknown });
}
