/** Whether `code` is an SSCC: 18 digits whose last is the GS1 mod-10 check digit of the other 17. */
export function isSscc(code: string): boolean {
  if (!/^\d{18}$/.test(code)) return false;
  let total = 0;
  for (let i = 0; i < 17; i++) total += Number(code[i]) * (i % 2 === 0 ? 3 : 1);
  return (10 - (total % 10)) % 10 === Number(code[17]);
}
