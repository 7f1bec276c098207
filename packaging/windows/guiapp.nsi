; NSIS installer for the Windows bundle dist\guiapp (packaging\guiapp-windows.spec).
; NOT built or tested here (no Windows runner); see packaging\README.md.
;   makensis /DVERSION=0.1.0 packaging\windows\guiapp.nsi
; Output: dist\guiapp-VERSION-windows-x64-setup.exe. Per-machine install into
; "C:\Program Files\guiapp", Start-menu shortcut, .gproj association, uninstaller in
; "Apps & features". Needs NSIS 3.x (Unicode); run from the repo root.

Unicode true
!include "MUI2.nsh"
!include "x64.nsh"
!include "FileFunc.nsh"

!ifndef VERSION
  !define VERSION "0.1.0"
!endif
!define APPNAME "guiapp"
!define COMPANY "guiapp"
!define UNINSTKEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${APPNAME}"
!define SRCDIR "..\..\dist\guiapp"

Name "${APPNAME} ${VERSION}"
OutFile "..\..\dist\guiapp-${VERSION}-windows-x64-setup.exe"
InstallDir "$PROGRAMFILES64\${APPNAME}"
InstallDirRegKey HKLM "Software\${APPNAME}" "InstallDir"
RequestExecutionLevel admin
SetCompressor /SOLID lzma
SetCompressorDictSize 64
ManifestDPIAware true

!define MUI_ICON "..\..\resources\icons\guiapp.ico"
!define MUI_UNICON "..\..\resources\icons\guiapp.ico"
!define MUI_FINISHPAGE_RUN "$INSTDIR\guiapp.exe"
!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

VIProductVersion "${VERSION}.0"
VIAddVersionKey "ProductName" "${APPNAME}"
VIAddVersionKey "FileDescription" "${APPNAME} installer"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "LegalCopyright" "MIT"

Function .onInit
  ${IfNot} ${RunningX64}
    MessageBox MB_ICONSTOP "${APPNAME} needs 64-bit Windows."
    Abort
  ${EndIf}
  SetRegView 64
FunctionEnd

Section "guiapp" SecMain
  SectionIn RO
  ; a previous version's files go first, so no stale DLL survives an upgrade
  RMDir /r "$INSTDIR\_internal"
  SetOutPath "$INSTDIR"
  File /r "${SRCDIR}\*.*"
  WriteUninstaller "$INSTDIR\uninstall.exe"

  CreateShortCut "$SMPROGRAMS\${APPNAME}.lnk" "$INSTDIR\guiapp.exe" "" "$INSTDIR\guiapp.exe" 0

  ; .gproj -> guiapp
  WriteRegStr HKLM "Software\Classes\.gproj" "" "guiapp.project"
  WriteRegStr HKLM "Software\Classes\guiapp.project" "" "guiapp project"
  WriteRegStr HKLM "Software\Classes\guiapp.project\DefaultIcon" "" "$INSTDIR\guiapp.exe,0"
  WriteRegStr HKLM "Software\Classes\guiapp.project\shell\open\command" "" '"$INSTDIR\guiapp.exe" "%1"'

  WriteRegStr HKLM "Software\${APPNAME}" "InstallDir" "$INSTDIR"
  WriteRegStr HKLM "${UNINSTKEY}" "DisplayName" "${APPNAME}"
  WriteRegStr HKLM "${UNINSTKEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKLM "${UNINSTKEY}" "Publisher" "${COMPANY}"
  WriteRegStr HKLM "${UNINSTKEY}" "DisplayIcon" "$INSTDIR\guiapp.exe,0"
  WriteRegStr HKLM "${UNINSTKEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKLM "${UNINSTKEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKLM "${UNINSTKEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKLM "${UNINSTKEY}" "NoModify" 1
  WriteRegDWORD HKLM "${UNINSTKEY}" "NoRepair" 1
  ${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
  IntFmt $0 "0x%08X" $0
  WriteRegDWORD HKLM "${UNINSTKEY}" "EstimatedSize" "$0"
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'
SectionEnd

Section "Uninstall"
  SetRegView 64
  Delete "$SMPROGRAMS\${APPNAME}.lnk"
  RMDir /r "$INSTDIR\_internal"
  Delete "$INSTDIR\guiapp.exe"
  Delete "$INSTDIR\guiapp-cli.exe"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  DeleteRegKey HKLM "Software\Classes\guiapp.project"
  ReadRegStr $0 HKLM "Software\Classes\.gproj" ""
  StrCmp $0 "guiapp.project" 0 +2
    DeleteRegKey HKLM "Software\Classes\.gproj"
  DeleteRegKey HKLM "${UNINSTKEY}"
  DeleteRegKey HKLM "Software\${APPNAME}"
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'
SectionEnd
