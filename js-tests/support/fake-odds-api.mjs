// Moved to the package so the shipped demo (odds-gate demo) and the tests share one copy:
// edit pkg-template/demo/fake-odds-api.js.
export * from '../../pkg-template/demo/fake-odds-api.js';
