import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Whether a webhook may reach an address without WEBHOOK_ALLOW_PRIVATE_NETWORKS: only ipaddr.js's
 * `unicast` range (every private and reserved range taken out); IPv4-mapped IPv6 judged as IPv4.
 * IPv4-compatible IPv6 (`::/96`, deprecated since 2006; ipaddr.js calls it unicast) is refused:
 * `::7f00:1` is 127.0.0.1 to some stacks.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    else if (v6.parts.slice(0, 6).every((part) => part === 0)) return false;
  }
  return parsed.range() === 'unicast';
}

export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
}

// The address is not said: the delivery log is the client's, and internal addresses are the operator's business.
const refusal = (host: string) =>
  new BlockedAddressError(`${host} resolves to a private or reserved address (WEBHOOK_ALLOW_PRIVATE_NETWORKS is off)`);

/**
 * The deliveries' socket `lookup`: refuses when any resolved address is not public. The socket
 * connects to what this returns, so the check holds against DNS rebinding.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return (callback as (e: Error) => void)(error);
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked || addresses.length === 0) return (callback as (e: Error) => void)(refusal(hostname));
    if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
    return (callback as (e: null, a: string, f: number) => void)(null, addresses[0].address, addresses[0].family);
  });
};

/** Sockets skip `lookup` for an IP literal host, so those are checked here. */
export function literalAddressOf(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : null;
}

export function checkLiteralHost(hostname: string): void {
  const literal = literalAddressOf(hostname);
  if (literal !== null && !isPublicAddress(literal)) throw refusal(hostname);
}
