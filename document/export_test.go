package document

// InOrder is inOrder for the package's external tests (package
// document_test), which cannot call it otherwise.
var InOrder = inOrder
