// Copy buttons: <button data-copy="element-id"> copies that element's text.
document.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-copy]');
  if (!button) return;
  const text = document.getElementById(button.dataset.copy)?.textContent ?? '';
  navigator.clipboard?.writeText(text).then(
    () => {
      button.textContent = 'Copied';
    },
    () => {
      button.textContent = 'Select and copy';
    },
  );
});

// Times: the server writes <time datetime> in UTC (readable without script); here they read in the
// viewer's time zone, relative when within a day ("3 min ago"), and the exact UTC time stays in the title.
const local = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' });
const STEPS = [
  [60, 'second', 1],
  [3600, 'minute', 60],
  [86400, 'hour', 3600],
];
function localTimes(root) {
  const now = Date.now();
  for (const time of root.querySelectorAll('time[datetime]')) {
    const at = new Date(time.getAttribute('datetime'));
    if (Number.isNaN(at.getTime())) continue;
    const seconds = Math.round((at.getTime() - now) / 1000);
    const step = STEPS.find(([limit]) => Math.abs(seconds) < limit);
    time.textContent = step ? relative.format(Math.round(seconds / step[2]), step[1]) : local.format(at);
  }
}
localTimes(document);
document.addEventListener('htmx:afterSettle', (event) => localTimes(event.target));
