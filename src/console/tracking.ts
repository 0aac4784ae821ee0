/**
 * Carriers whose public tracking page takes the number in its address, by SCAC or by a word of the
 * carrier's name. Any other carrier's numbers show as text: a guessed address would mislead.
 */
const CARRIERS: Array<{ scacs: string[]; name: RegExp; url: (n: string) => string }> = [
  { scacs: ['UPSN', 'UPSS', 'UPGF'], name: /\bups\b/i, url: (n) => `https://www.ups.com/track?tracknum=${n}` },
  {
    scacs: ['FDEG', 'FDXE', 'FXFE', 'FDEN'],
    name: /\bfed\s?ex\b/i,
    url: (n) => `https://www.fedex.com/fedextrack/?trknbr=${n}`,
  },
  { scacs: ['USPS'], name: /\busps\b/i, url: (n) => `https://tools.usps.com/go/TrackConfirmAction?tLabels=${n}` },
  {
    scacs: ['DHLC', 'DHLG', 'DHXE'],
    name: /\bdhl\b/i,
    url: (n) => `https://www.dhl.com/global-en/home/tracking.html?tracking-id=${n}`,
  },
  {
    scacs: ['AUPO'],
    name: /\baustralia post\b|\bauspost\b/i,
    url: (n) => `https://auspost.com.au/mypost/track/details/${n}`,
  },
];

/** Each tracking number with its carrier's tracking page, or null where the carrier is not one of those. */
export function trackingLinks(
  carrier: { name: string; scac?: string | null } | null,
  numbers: string[],
): Array<{ number: string; url: string | null }> {
  const known =
    carrier &&
    CARRIERS.find((c) => (carrier.scac && c.scacs.includes(carrier.scac.toUpperCase())) || c.name.test(carrier.name));
  return numbers.map((number) => ({ number, url: known ? known.url(encodeURIComponent(number)) : null }));
}
