#!/bin/sh
# Makes the S/MIME and signed-file fixtures of TestSMIME and TestP7M with
# OpenSSL, signed by a throwaway self-signed key (made here, not kept):
# invoice.xml (written for the tests) signed as a .p7m in DER, BER
# (streamed: indefinite lengths, content in pieces) and PEM, encrypted,
# and as a detached signature; a plain-text invoice signed as an e-mail
# (multipart/signed, and opaque smime.p7m) and encrypted; an e-mail
# carrying the DER .p7m. The outputs are committed; run this only to make
# them again.
set -eu
t=$(mktemp -d)
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$t/k.pem" -out "$t/c.pem" \
  -subj "/CN=Ann Sender/emailAddress=ann@example.com" -days 3650 2>/dev/null
S="-signer $t/c.pem -inkey $t/k.pem"
openssl smime -sign -nodetach -binary -in invoice.xml $S -outform DER > invoice-der.xml.p7m
openssl cms -sign -nodetach -binary -stream -in invoice.xml $S -outform DER > invoice-ber.xml.p7m
openssl smime -sign -nodetach -binary -in invoice.xml $S -outform PEM > invoice-pem.xml.p7m
openssl cms -encrypt -in invoice.xml -outform DER "$t/c.pem" > encrypted.xml.p7m
openssl cms -sign -binary -in invoice.xml $S -outform DER > invoice.xml.p7s
printf 'Content-Type: text/plain\r\n\r\nInvoice INV-77 total 99.00 EUR\r\n' > "$t/body.txt"
H="-from ann@example.com -to bob@example.com"
openssl smime -sign -in "$t/body.txt" $S $H -subject "Invoice INV-77" > signed.eml
openssl smime -sign -nodetach -in "$t/body.txt" $S $H -subject "Invoice INV-77 opaque" > opaque.eml
openssl smime -encrypt -in "$t/body.txt" $H -subject "Invoice INV-77 secret" "$t/c.pem" > encrypted.eml
{
  printf 'From: sdi@example.it\nTo: bob@example.com\nSubject: Fattura IT01234567890_FPA01\nMIME-Version: 1.0\n'
  printf 'Content-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nInvoice attached.\n--XX\n'
  printf 'Content-Type: application/pkcs7-mime; name="IT01234567890_FPA01.xml.p7m"\n'
  printf 'Content-Disposition: attachment; filename="IT01234567890_FPA01.xml.p7m"\nContent-Transfer-Encoding: base64\n\n'
  base64 invoice-der.xml.p7m
  printf -- '--XX--\n'
} > fattura.eml
rm -r "$t"
