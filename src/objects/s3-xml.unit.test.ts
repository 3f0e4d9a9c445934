import { describe, expect, it } from 'vitest';
import { completeUploadXml, describeS3Error, parseListPage, xmlField } from './s3-xml.js';

describe('S3 XML', () => {
  it('reads a ListObjectsV2 page: keys unescaped, sizes, times, the continuation token', () => {
    const page = parseListPage(`<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult><Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>
<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
<Contents><Key>p/a &amp; b&#x27;s &lt;c&gt;</Key><LastModified>2025-06-01T10:00:00.000Z</LastModified><Size>12</Size></Contents>
<Contents><Key>p/&#233;t&#xe9;</Key><LastModified>2025-06-02T10:00:00.000Z</LastModified><Size>0</Size><Owner><ID>x</ID></Owner></Contents>
</ListBucketResult>`);
    expect(page).toEqual({
      objects: [
        { key: "p/a & b's <c>", size: 12, modifiedAt: new Date('2025-06-01T10:00:00.000Z') },
        { key: 'p/été', size: 0, modifiedAt: new Date('2025-06-02T10:00:00.000Z') },
      ],
      nextToken: '1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=',
    });
  });

  it('decodes url-encoded keys only when the answer says they are', () => {
    const keys = (xml: string) => parseListPage(xml).objects.map((o) => o.key);
    const contents = '<Contents><Key>a+b%2Bc%20%C3%A9</Key><Size>1</Size></Contents>';
    expect(keys(`<ListBucketResult><EncodingType>url</EncodingType>${contents}</ListBucketResult>`)).toEqual([
      'a b+c é',
    ]);
    expect(keys(`<ListBucketResult>${contents}</ListBucketResult>`)).toEqual(['a+b%2Bc%20%C3%A9']);
  });

  it('refuses a truncated page without a token rather than end the listing early', () => {
    expect(parseListPage('<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>')).toEqual({
      objects: [],
      nextToken: undefined,
    });
    expect(() =>
      parseListPage('<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>'),
    ).toThrow(/no continuation token/);
  });

  it('writes the part list of a completed upload, and reads upload ids and errors', () => {
    expect(completeUploadXml(['"e1"', '"e2"'])).toBe(
      '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e1"</ETag></Part>' +
        '<Part><PartNumber>2</PartNumber><ETag>"e2"</ETag></Part></CompleteMultipartUpload>',
    );
    expect(
      xmlField(
        '<InitiateMultipartUploadResult><UploadId>u-1</UploadId></InitiateMultipartUploadResult>',
        'UploadId',
      ),
    ).toBe('u-1');
    expect(describeS3Error('<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>')).toBe(
      'AccessDenied: Access Denied',
    );
    expect(describeS3Error('<Error><Code>SlowDown</Code></Error>')).toBe('SlowDown');
    expect(describeS3Error('<CompleteMultipartUploadResult/>')).toBeNull();
  });
});
