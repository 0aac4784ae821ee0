// Loaded first by the test scripts (package.json), so that the test files and the code they import
// run as TypeScript without a build step: by Node's own type stripping where it has it (Node 22.18
// and later; the code keeps to erasable syntax, tsconfig's `erasableSyntaxOnly`), else through
// tsx's loader (Node 20). Node's own is about twice as quick to load the application, which every
// test process and every server and CLI process a test starts pays (docs/decisions/0001-ci-in-15-minutes.md).
// Plain JavaScript, as on Node 20 nothing can load TypeScript before this has run.
if (!process.features.typescript) {
  const { register } = await import('tsx/esm/api');
  register();
}
