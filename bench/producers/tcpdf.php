<?php
// TCPDF versions of the invoice: a core font (helvetica) with Latin-1 text
// and an embedded Unicode font (dejavusans) with Polish, Greek and Cyrillic.
require_once('/usr/share/php/tcpdf/tcpdf.php');
function invoice($path, $font, $buyer) {
  $pdf = new TCPDF('P', 'mm', 'A4', true, 'UTF-8', false);
  $pdf->setPrintHeader(false); $pdf->setPrintFooter(false);
  $pdf->SetTitle('Invoice 2026-0417');
  $pdf->AddPage();
  $pdf->SetFont($font, 'B', 10);
  $pdf->Cell(90, 5, 'Müller & Søn Großhandel GmbH', 0, 0, 'L');
  $pdf->Cell(90, 5, 'Bill to', 0, 1, 'R');
  $pdf->SetFont($font, '', 10);
  $pdf->Cell(90, 5, 'Kärntner Straße 12', 0, 0, 'L'); $pdf->Cell(90, 5, $buyer[0], 0, 1, 'R');
  $pdf->Cell(90, 5, '1010 Wien, Österreich', 0, 0, 'L'); $pdf->Cell(90, 5, $buyer[1], 0, 1, 'R');
  $pdf->Ln(8);
  $pdf->SetFont($font, 'B', 16); $pdf->Cell(0, 8, 'Invoice No. 2026-0417', 0, 1);
  $pdf->SetFont($font, 'B', 10);
  $w = array(12, 90, 18, 30, 30);
  foreach (array('Pos.', 'Description', 'Qty', 'Unit price', 'Amount') as $i => $h) $pdf->Cell($w[$i], 6, $h, 'B', 0, $i >= 2 ? 'R' : 'L');
  $pdf->Ln();
  $pdf->SetFont($font, '', 10);
  $rows = array(array('1', 'Desk lamp "Äther", white', '2', '49.90 €', '99.80 €'),
    array('2', 'Office chair Ergonomic Plus', '1', '1,249.00 €', '1,249.00 €'),
    array('3', 'Cable duct, 2 m', '12', '7.45 €', '89.40 €'),
    array('4', 'Installation on site, hours', '3.5', '68.00 €', '238.00 €'),
    array('5', 'Shipping', '1', '15.00 €', '15.00 €'));
  foreach ($rows as $r) { foreach ($r as $i => $c) $pdf->Cell($w[$i], 6, $c, 'B', 0, $i >= 2 ? 'R' : 'L'); $pdf->Ln(); }
  $pdf->Ln(4);
  foreach (array(array('Subtotal', '1,691.20 €'), array('VAT 20 %', '338.24 €'), array('Total due', '2,029.44 €')) as $t) {
    $pdf->Cell(120, 6, '', 0, 0); $pdf->Cell(30, 6, $t[0], 0, 0, 'L'); $pdf->Cell(30, 6, $t[1], 0, 1, 'R');
  }
  $pdf->Ln(6);
  $pdf->MultiCell(0, 5, 'Payable within 14 days to IBAN AT61 1904 3002 3457 3201. UK customers: a late fee of £25 applies. Contact: Zoë Dvořák.', 0, 'L');
  $pdf->Output($path, 'F');
}
invoice($argv[1] . '/invoice-helvetica.pdf', 'helvetica', array('Jérôme Lefèvre', 'Rue de la Paix 7, Paris'));
invoice($argv[1] . '/invoice-dejavu.pdf', 'dejavusans', array('Paweł Łukasiewicz', 'Ελλάδα, Москва, Kraków'));
