// Copy buttons: <button data-copy="element-id"> copies that element's text.
document.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-copy]');
  if (!button) return;
  const text = document.getElementById(button.dataset.copy)?.textContent ?? '';
  navigator.clipboard?.writeText(text).then(() => { button.textContent = 'Copied'; }, () => { button.textContent = 'Select and copy'; });
});
